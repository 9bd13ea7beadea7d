#include "backend/fsdp_plan/device_allocator.h"

#include <set>

namespace fs::fsdp_plan {

namespace {
int64_t roundUp(int64_t n, int64_t to) {
  return (n + to - 1) / to * to;
}
}  // namespace

int64_t cudaRoundedBytes(int64_t request) {
  if (request <= 0) return 0;
  return roundUp(request, kCudaMinBlockBytes);
}

int64_t cudaSegmentBytes(int64_t request) {
  const int64_t size = cudaRoundedBytes(request);
  if (size <= kCudaSmallRequestBytes) return kCudaSmallSegmentBytes;
  if (size < kCudaMinLargeAllocBytes) return kCudaLargeSegmentBytes;
  return roundUp(size, kCudaRoundLargeBytes);
}

DeviceBytes cudaLiveSet(const std::vector<int64_t>& requests) {
  DeviceBytes out;
  // The free blocks of each pool (the remainders of split segments), by size.
  std::multiset<int64_t> freeSmall, freeLarge;
  for (const int64_t request : requests) {
    const int64_t size = cudaRoundedBytes(request);
    if (size == 0) continue;
    out.requested += request;
    const bool small = size <= kCudaSmallRequestBytes;
    std::multiset<int64_t>& pool = small ? freeSmall : freeLarge;
    auto it = pool.lower_bound(size);  // best fit: the smallest free block that holds it
    int64_t block = 0;
    if (it != pool.end()) {
      block = *it;
      pool.erase(it);
    } else {
      block = cudaSegmentBytes(size);
      out.reserved += block;
      ++out.segments;
    }
    const int64_t remaining = block - size;
    const bool split = small ? remaining >= kCudaMinBlockBytes : remaining > kCudaSmallRequestBytes;
    if (split) {
      pool.insert(remaining);
      out.allocated += size;
    } else {
      out.allocated += block;
    }
  }
  return out;
}

}  // namespace fs::fsdp_plan
