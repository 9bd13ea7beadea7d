#include "backend/step/seeding.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/torch.h>

#include <mutex>

namespace fs::step {
namespace {
std::vector<uint8_t> bytesOf(const at::Tensor& state) {
  const auto s = state.contiguous();
  const auto* p = s.data_ptr<uint8_t>();
  return std::vector<uint8_t>(p, p + s.numel());
}

at::Tensor tensorOf(const std::vector<uint8_t>& bytes) {
  auto t = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  std::memcpy(t.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return t;
}

int64_t cudaDevices() {
  return at::hasCUDA() ? at::detail::getCUDAHooks().getNumGPUs() : 0;
}
}  // namespace

data::Rng& trainRng() {
  static data::Rng rng(0);
  return rng;
}

void seedEverything(uint64_t seed) {
  torch::manual_seed(seed);
  trainRng().reseed(seed);
}

RngSnapshot captureRng() {
  RngSnapshot s;
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    s.torchCpu = bytesOf(gen.get_state());
  }
  for (int64_t d = 0; d < cudaDevices(); ++d) {
    auto gen =
        at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(d)));
    std::lock_guard<std::mutex> lock(gen.mutex());
    s.torchCuda.push_back(bytesOf(gen.get_state()));
  }
  s.own = trainRng().state();
  return s;
}

protocol::Status restoreRng(const RngSnapshot& s) {
  if (static_cast<int64_t>(s.torchCuda.size()) != cudaDevices()) {
    return protocol::Status::invalidArgument("rng state: saved with " + std::to_string(s.torchCuda.size()) +
                                             " CUDA devices, this process has " +
                                             std::to_string(cudaDevices()));
  }
  try {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(tensorOf(s.torchCpu));
  } catch (const c10::Error& e) {
    return protocol::Status::corruption(std::string("rng state: CPU generator state rejected: ") +
                                        e.what_without_backtrace());
  }
  for (size_t d = 0; d < s.torchCuda.size(); ++d) {
    try {
      auto gen =
          at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(d)));
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(tensorOf(s.torchCuda[d]));
    } catch (const c10::Error& e) {
      return protocol::Status::corruption("rng state: CUDA generator " + std::to_string(d) +
                                          " state rejected: " + e.what_without_backtrace());
    }
  }
  trainRng().setState(s.own);
  return protocol::Status::ok();
}

}  // namespace fs::step
