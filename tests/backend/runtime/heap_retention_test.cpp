// runtime::retainFreedHeap (NOTE [Retained heap]): a block freed and allocated again is served
// from pages the process already has, so touching it again costs no page faults.
#include "backend/runtime/heap_retention.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>

namespace fs::runtime {
namespace {

long minorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Allocates `bytes`, writes every byte, frees it; returns the minor faults that cost.
long faultsOfTouchedBlock(std::size_t bytes) {
  const long before = minorFaults();
  void* p = std::malloc(bytes);
  EXPECT_NE(p, nullptr);
  std::memset(p, 1, bytes);
  // Keep the write: the compiler may not drop a memset whose result is read.
  EXPECT_EQ(static_cast<volatile unsigned char*>(p)[bytes - 1], 1);
  std::free(p);
  return minorFaults() - before;
}

TEST(HeapRetention, ABlockFreedAndAllocatedAgainCostsNoPageFaults) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc";
#else
  ASSERT_TRUE(retainFreedHeap());
  constexpr std::size_t kBytes = std::size_t{8} << 20;  // 2,048 pages; a tensor of a small step's size
  faultsOfTouchedBlock(kBytes);                         // the first time the heap grows to hold it
  // With glibc's defaults every round maps (or grows the heap top to) fresh pages again: ~2,048
  // faults. Retained, the block's pages are resident; allow a few for the test's own bookkeeping.
  for (int round = 0; round < 3; ++round) EXPECT_LT(faultsOfTouchedBlock(kBytes), 64) << "round " << round;
#endif
}

}  // namespace
}  // namespace fs::runtime
