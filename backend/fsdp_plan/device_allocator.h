// The planner's GPU mode: what the CUDA caching allocator makes of a set of live tensors.
//
// NOTE [CUDA caching allocator rules] (from PyTorch's c10/cuda/CUDACachingAllocator.cpp,
// round_size / get_allocation_size / should_split and the constants above them; the same in
// LibTorch 1.13 and 2.x with the default allocator settings):
//  - Every request is rounded up to a multiple of 512 B (kMinBlockSize), at least 512 B.
//  - Requests of at most 1 MiB (kSmallSize) come from the small pool, whose segments are
//    2 MiB (kSmallBuffer); larger ones from the large pool: below 10 MiB (kMinLargeAlloc) a new
//    segment is 20 MiB (kLargeBuffer), from 10 MiB on it is the request rounded up to 2 MiB
//    (kRoundLarge).
//  - A request takes the smallest free block of its pool that fits (best fit). The block is
//    split when what remains is worth keeping: at least 512 B in the small pool, more than
//    1 MiB in the large pool; otherwise the request gets the whole block (so a large request
//    within 1 MiB of its 2 MiB-rounded segment is allocated the whole segment).
//  - allocated bytes are the blocks handed out; reserved bytes the segments taken from the
//    driver. The allocator's statistics count exactly these (runtime/device_memory.h).
// Not modelled: streams (one stream assumed), PYTORCH_CUDA_ALLOC_CONF options
// (max_split_size_mb, roundup_power2_divisions, expandable_segments), and memory the
// allocator does not serve (NCCL's buffers, cuBLAS workspaces, the CUDA context).
//
// NOTE [Reserved for a live set]: cudaLiveSet() replays a set of requests, in order, into an
// empty allocator: no frees, every segment opened for them. That is the least the allocator
// can reserve to hold that set at once; a real step reserves more where blocks freed earlier
// stay cached in segments the live set does not fill (fragmentation), which the allocator
// keeps until empty_cache. So `reserved` is a lower bound of the step's reserved peak and
// `allocated` the allocator's allocated bytes for those tensors exactly.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace fs::fsdp_plan {

inline constexpr int64_t kCudaMinBlockBytes = 512;
inline constexpr int64_t kCudaSmallRequestBytes = int64_t{1} << 20;  // largest small-pool request
inline constexpr int64_t kCudaSmallSegmentBytes = int64_t{2} << 20;
inline constexpr int64_t kCudaLargeSegmentBytes = int64_t{20} << 20;  // for requests in (1 MiB, 10 MiB)
inline constexpr int64_t kCudaMinLargeAllocBytes = int64_t{10} << 20;
inline constexpr int64_t kCudaRoundLargeBytes = int64_t{2} << 20;

// A request rounded to the allocator's block size (0 for 0: an empty tensor allocates nothing).
int64_t cudaRoundedBytes(int64_t request);
// The segment the allocator opens for `request` when no cached block fits.
int64_t cudaSegmentBytes(int64_t request);

struct DeviceBytes {
  int64_t requested = 0;  // the tensors' own bytes
  int64_t allocated = 0;  // blocks handed out (rounding, unsplit remainders)
  int64_t reserved = 0;   // segments taken from the driver
  int64_t segments = 0;
  bool operator==(const DeviceBytes&) const = default;
};

// The requests (bytes, >= 0) allocated in order into an empty allocator (NOTE [Reserved for a
// live set]).
DeviceBytes cudaLiveSet(const std::vector<int64_t>& requests);

}  // namespace fs::fsdp_plan
