// What a device's memory allocator holds: allocated and reserved bytes, now and at their peak.
//
// NOTE [Device memory counters]
// On CUDA the figures are the caching allocator's own device statistics (all pools together):
//  - allocated: bytes of the blocks handed out to tensors, each request rounded up to the
//    allocator's block size (NOTE [CUDA caching allocator rules] in
//    backend/fsdp_plan/device_allocator.h);
//  - reserved: bytes of the segments the allocator took from the driver (cudaMalloc), held
//    whether or not a tensor uses them; reserved - allocated is the cache and the rounding;
//  - the peaks are the highest values since resetDevicePeaks() (or the process start).
// These statistics are one per device and process: every thread's allocations count. On a
// CPU device (or any device without a caching allocator, or a build without CUDA) there is
// nothing to read: readDeviceMemory() answers std::nullopt.
//
// Thread-safety: both functions may be called from any thread (the allocator locks).
// Ownership: plain values.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>

namespace fs::runtime {

struct DeviceMemory {
  std::int64_t allocated = 0;
  std::int64_t reserved = 0;
  std::int64_t peakAllocated = 0;
  std::int64_t peakReserved = 0;
  bool operator==(const DeviceMemory&) const = default;
};

// The allocator's counters for `device`; std::nullopt on CPU and without CUDA.
// REQUIRES: a CUDA device has an index (cuda:0, not cuda).
std::optional<DeviceMemory> readDeviceMemory(const c10::Device& device);
// Starts a new peak interval on `device`: both peaks become the current values. No-op where
// readDeviceMemory() answers std::nullopt.
void resetDevicePeaks(const c10::Device& device);

}  // namespace fs::runtime
