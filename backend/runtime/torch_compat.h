// The one place for differences between the LibTorch versions the engine
// builds against: Debian's 1.13 (CI, this machine) and a current 2.x (the
// PyTorch package on a GPU machine). Code elsewhere calls these and never
// tests TORCH_VERSION_* itself (NOTE [One compatibility header]).
//
// Header-only, no state; every function is safe from any thread (autocast
// state is thread-local in LibTorch).
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <torch/version.h>

// True when the LibTorch being compiled against is at least major.minor.
#define FS_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// NOTE [One compatibility header]
// What differs, and where it is handled:
// - Autocast state (below): per-device functions replaced the CPU / GPU pairs in
//   2.4 (at::autocast::is_autocast_enabled(device_type) and friends); the old pairs
//   were deprecated then.
// - c10::Allocator: 1.13 declares `allocate` const, later releases non-const with a
//   pure virtual `copy_data`. Handled without a version test by declaring both
//   (NOTE [Allocator interface across LibTorch versions] in telemetry/memory_tracker.cpp).
// - The CUDA caching allocator's statistics type moved from c10::cuda::CUDACachingAllocator
//   to c10::CachingDeviceAllocator: runtime/device_memory.cpp names no such type (NOTE
//   [Allocator statistics across LibTorch versions]).
// - CUDA streams: c10::DeviceIndex widened from int8 to int16 (2.2) and recordStream became
//   an inline; runtime/device_stream_cuda.cpp's calls read the same in both (`// compat:`).
// Files with `#ifdef FS_WITH_CUDA` are compiled against LibTorch 1.13's CUDA headers on
// CPU machines too (tests/cuda: cuda_sources_compile_test).
// - c10d process groups: ProcessGroupGloo / ProcessGroupNCCL derive from c10d::Backend
//   in 2.x instead of c10d::ProcessGroup; dist/process_group_communicator.cpp uses only
//   the collective calls both share (allreduce, broadcast, allgather, reduce_scatter,
//   barrier) through a template on the concrete class, so no test is needed there.
namespace fs::runtime::compat {

inline bool autocastEnabled(c10::DeviceType device) {
#if FS_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

inline void setAutocastEnabled(c10::DeviceType device, bool enabled) {
#if FS_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

inline c10::ScalarType autocastDtype(c10::DeviceType device) {
#if FS_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

inline void setAutocastDtype(c10::DeviceType device, c10::ScalarType dtype) {
#if FS_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

}  // namespace fs::runtime::compat
