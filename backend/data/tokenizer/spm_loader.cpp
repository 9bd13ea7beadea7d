#include "backend/data/tokenizer/spm_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace fs::data::spm {

namespace {

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("FS_SPM_SHIM"); env && *env) out.emplace_back(env);
  out.emplace_back(FS_SPM_SHIM_BUILD_PATH);
  out.emplace_back(FS_SPM_SHIM_INSTALL_PATH);
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // The installed layout wherever the package was installed (<prefix>/bin -> <prefix>/lib).
    out.push_back((exe.parent_path() / "../lib/flamingo-train/fs_spm_shim.so").lexically_normal().string());
    out.push_back((exe.parent_path() / "fs_spm_shim.so").string());
  }
  return out;
}

#define FS_SPM_CLANG_ASAN 0
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#undef FS_SPM_CLANG_ASAN
#define FS_SPM_CLANG_ASAN 1
#endif
#endif

protocol::StatusOr<const Api*> load() {
  // Deep binding keeps sentencepiece's protobuf copy to itself; sanitizer
  // runtimes refuse RTLD_DEEPBIND, and sanitizer builds do not load LibTorch's
  // protobuf in the tokenizer tests anyway.
  // GCC says ASan with __SANITIZE_ADDRESS__, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__) || FS_SPM_CLANG_ASAN
  constexpr int kFlags = RTLD_NOW | RTLD_LOCAL;
#else
  constexpr int kFlags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif
  std::string tried;
  for (const auto& path : candidates()) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      tried += "\n  " + path + " (not there)";
      continue;
    }
    void* handle = dlopen(path.c_str(), kFlags);
    if (!handle) {
      tried += "\n  " + path + ": " + dlerror();
      continue;
    }
    auto entry = reinterpret_cast<const Api* (*)()>(dlsym(handle, kEntryPoint));
    const Api* api = entry ? entry() : nullptr;
    if (!api || api->version != kApiVersion) {
      tried += "\n  " + path + ": not a matching fs_spm_shim";
      continue;
    }
    return api;
  }
  return protocol::Status::notFound("SentencePiece support (fs_spm_shim.so) not found; tried:" + tried +
                                    "\nset FS_SPM_SHIM to its path");
}

}  // namespace

protocol::StatusOr<const Api*> loadApi() {
  static const protocol::StatusOr<const Api*> api = load();
  return api;
}

}  // namespace fs::data::spm
