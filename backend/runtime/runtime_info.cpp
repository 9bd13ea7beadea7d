#include "backend/runtime/runtime_info.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>
#include <torch/torch.h>

#include <filesystem>
#include <sstream>

#ifndef FS_VERSION
#define FS_VERSION "unknown"
#endif

namespace fs::runtime {

std::string engineVersion() {
  return FS_VERSION;
}

std::string libtorchVersion() {
  std::ostringstream os;
  os << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH;
  return os.str();
}

bool builtWithCuda() {
#ifdef FS_WITH_CUDA
  return true;
#else
  return false;
#endif
}

std::string cudaRuntimeVersion() {
  if (!builtWithCuda()) return "";
  const long v = at::detail::getCUDAHooks().versionCUDART();  // e.g. 13000 for 13.0
  return v > 0 ? std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10) : "";
}

bool builtWithNccl() {
#ifdef USE_C10D_NCCL
  return true;
#else
  return false;
#endif
}

bool cudaAvailable() {
  return torch::cuda::is_available();
}

int cudaDeviceCount() {
  return builtWithCuda() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

int intraOpThreads() {
  return torch::get_num_threads();
}

std::string blasDescription() {
  // The first lines of ATen's build config name the BLAS it was built against; sgemmLibrary() says
  // which library's sgemm_ this process calls.
  const std::string cfg = at::show_config();
  const auto pos = cfg.find("BLAS_INFO=");
  if (pos == std::string::npos) return "unknown";
  return cfg.substr(pos + 10, cfg.find_first_of(",\n", pos) - pos - 10);
}

std::string sgemmLibrary() {
  void* symbol = ::dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (symbol == nullptr || ::dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return "";
  return std::filesystem::path(info.dli_fname).filename().string();
}

}  // namespace fs::runtime
