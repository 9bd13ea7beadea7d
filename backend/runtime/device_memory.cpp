// The CUDA caching allocator's device statistics. The only file that reads them.
//
// NOTE [Allocator statistics across LibTorch versions]
// getDeviceStats(device) and resetPeakStats(device) are free functions of
// c10::cuda::CUDACachingAllocator in LibTorch 1.13 and in 2.x alike; what moved is the type
// they speak: DeviceStats, Stat and StatType lived in c10::cuda::CUDACachingAllocator (1.13),
// then in c10::CachingDeviceAllocator (DeviceStats, with Stat/StatType moving on to
// c10::CachingAllocator in the latest releases), and the device parameter went from int to
// c10::DeviceIndex. So this file names none of those types: the result is `auto`, the device
// index converts implicitly to either parameter type, and the aggregate statistic (all pools)
// is read by its index, StatType::AGGREGATE == 0 in every version.
#include "backend/runtime/device_memory.h"

#ifdef FS_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <c10/util/Exception.h>

namespace fs::runtime {

namespace {
#ifdef FS_WITH_CUDA
constexpr std::size_t kAggregate = 0;  // compat: StatType::AGGREGATE; the enum's namespace differs by version
#endif
}  // namespace

std::optional<DeviceMemory> readDeviceMemory(const c10::Device& device) {
#ifdef FS_WITH_CUDA
  if (device.is_cuda()) {
    TORCH_CHECK(device.has_index(), "readDeviceMemory: ", device, " has no index (name one: cuda:0)");
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());  // compat: see NOTE
    DeviceMemory m;
    m.allocated = stats.allocated_bytes[kAggregate].current;
    m.reserved = stats.reserved_bytes[kAggregate].current;
    m.peakAllocated = stats.allocated_bytes[kAggregate].peak;
    m.peakReserved = stats.reserved_bytes[kAggregate].peak;
    return m;
  }
#endif
  (void)device;
  return std::nullopt;
}

void resetDevicePeaks(const c10::Device& device) {
#ifdef FS_WITH_CUDA
  if (device.is_cuda()) {
    TORCH_CHECK(device.has_index(), "resetDevicePeaks: ", device, " has no index (name one: cuda:0)");
    c10::cuda::CUDACachingAllocator::resetPeakStats(
        device.index());  // compat: int (1.13) / DeviceIndex (2.x)
  }
#endif
  (void)device;
}

}  // namespace fs::runtime
