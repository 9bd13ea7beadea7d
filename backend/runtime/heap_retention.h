// glibc malloc settings for a training process: freed tensor memory stays in the heap.
// Call once, early, on the thread that starts the run (mallopt is process-wide).
//
// NOTE [Retained heap]
// A CPU training step allocates and frees the same activation and gradient
// tensors every step, most of them 0.1-30 MB. glibc's defaults give such
// blocks to mmap (threshold 128 KiB, raised only as mapped blocks are freed)
// and trim the heap's top above twice that, so every step takes them from the
// kernel again: a page fault and a zeroed page per 4 KiB, mostly on the thread
// that computes while the other intra-op threads wait (perf: clear_page_erms
// and exc_page_fault, ~1,900 faults a small step at 2 threads). With blocks up
// to the largest mmap threshold glibc accepts (32 MiB) kept on the heap and
// no trimming below kTrimThresholdBytes, the second step reuses the first's
// pages. The values are the same; the resident set keeps the step's peak
// instead of returning to the between-step level.
#pragma once

#include <cstddef>

namespace fs::runtime {

inline constexpr std::size_t kMmapThresholdBytes = std::size_t{32} << 20;  // glibc's maximum on 64-bit
inline constexpr std::size_t kTrimThresholdBytes = std::size_t{1} << 30;

// Sets M_MMAP_THRESHOLD and M_TRIM_THRESHOLD as NOTE [Retained heap] says. Returns false when
// glibc refused either (or the C library is not glibc); the process then runs with its defaults.
bool retainFreedHeap();

}  // namespace fs::runtime
