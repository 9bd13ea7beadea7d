// NOTE [CUDA caching allocator rules] and NOTE [Reserved for a live set] (device_allocator.h), figure by
// figure; every expected value is derived by hand in the comment beside it (MiB = 1048576 B).
#include "backend/fsdp_plan/device_allocator.h"

#include <gtest/gtest.h>

namespace fs::fsdp_plan {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;

TEST(DeviceAllocator, RequestsRoundTo512Bytes) {
  EXPECT_EQ(cudaRoundedBytes(0), 0);          // an empty tensor allocates nothing
  EXPECT_EQ(cudaRoundedBytes(1), 512);        // at least one 512 B block
  EXPECT_EQ(cudaRoundedBytes(512), 512);      // a multiple stays
  EXPECT_EQ(cudaRoundedBytes(513), 1024);     // one byte more takes the next block
  EXPECT_EQ(cudaRoundedBytes(44376), 44544);  // 86.67 blocks -> 87 x 512
}

TEST(DeviceAllocator, SegmentSizesFollowThePools) {
  EXPECT_EQ(cudaSegmentBytes(1), 2 * kMiB);          // small pool
  EXPECT_EQ(cudaSegmentBytes(kMiB), 2 * kMiB);       // 1 MiB is still small
  EXPECT_EQ(cudaSegmentBytes(kMiB + 1), 20 * kMiB);  // rounds to 1 MiB + 512: large pool, below 10 MiB
  EXPECT_EQ(cudaSegmentBytes(10 * kMiB - 512), 20 * kMiB);
  EXPECT_EQ(cudaSegmentBytes(10 * kMiB), 10 * kMiB);      // from 10 MiB: its own segment, a multiple of 2 MiB
  EXPECT_EQ(cudaSegmentBytes(10 * kMiB + 1), 12 * kMiB);  // 10 MiB + 512 -> 12 MiB
}

TEST(DeviceAllocator, OneSmallTensor) {
  // 1 B: a 512 B block out of a fresh 2 MiB segment.
  EXPECT_EQ(cudaLiveSet({1}), (DeviceBytes{1, 512, 2 * kMiB, 1}));
  EXPECT_EQ(cudaLiveSet({}), (DeviceBytes{}));
  EXPECT_EQ(cudaLiveSet({0, 0}), (DeviceBytes{}));
}

TEST(DeviceAllocator, SmallTensorsShareTwoMebibyteSegments) {
  // Five 512 KiB tensors: four fill the first 2 MiB segment (the fourth takes the last 512 KiB whole, nothing
  // is left to split), the fifth opens a second one. Allocated 5 x 512 KiB, reserved 2 x 2 MiB.
  const std::vector<int64_t> five(5, 512 * kKiB);
  EXPECT_EQ(cudaLiveSet(five), (DeviceBytes{2560 * kKiB, 2560 * kKiB, 4 * kMiB, 2}));
  // 700 KiB, then 1 MiB in the 1348 KiB left (split: 324 KiB remain), then 700 KiB finds only 324 KiB free
  // and opens a second segment.
  EXPECT_EQ(cudaLiveSet({700 * kKiB, kMiB, 700 * kKiB}),
            (DeviceBytes{2424 * kKiB, 2424 * kKiB, 4 * kMiB, 2}));
}

TEST(DeviceAllocator, SmallBlocksSplitDownTo512Bytes) {
  // 1 MiB leaves 1 MiB of its 2 MiB segment; 1 MiB - 512 in it leaves exactly 512 B, still worth a block
  // (>= 512), so it is split off exactly: allocated 2 MiB - 512 in one segment.
  EXPECT_EQ(cudaLiveSet({kMiB, kMiB - 512}), (DeviceBytes{2 * kMiB - 512, 2 * kMiB - 512, 2 * kMiB, 1}));
  // The 512 B left then holds one more small tensor.
  EXPECT_EQ(cudaLiveSet({kMiB, kMiB - 512, 100}), (DeviceBytes{2 * kMiB - 412, 2 * kMiB, 2 * kMiB, 1}));
}

TEST(DeviceAllocator, MidSizedTensorsShareTwentyMebibyteSegments) {
  // 6 MiB each, from a 20 MiB segment: after three, 2 MiB remain (> 1 MiB, so each was split off exactly).
  EXPECT_EQ(cudaLiveSet({6 * kMiB, 6 * kMiB, 6 * kMiB}), (DeviceBytes{18 * kMiB, 18 * kMiB, 20 * kMiB, 1}));
  // A fourth does not fit the 2 MiB left: a second 20 MiB segment.
  EXPECT_EQ(cudaLiveSet({6 * kMiB, 6 * kMiB, 6 * kMiB, 6 * kMiB}),
            (DeviceBytes{24 * kMiB, 24 * kMiB, 40 * kMiB, 2}));
}

TEST(DeviceAllocator, LargeTensorsWithinOneMebibyteOfTheirSegmentTakeAllOfIt) {
  // 11 MiB + 1 B rounds to 11 MiB + 512 in a 12 MiB segment; 1 MiB - 512 would remain, not more than 1 MiB,
  // so the block is not split: the tensor is allocated the whole 12 MiB.
  EXPECT_EQ(cudaLiveSet({11 * kMiB + 1}), (DeviceBytes{11 * kMiB + 1, 12 * kMiB, 12 * kMiB, 1}));
  // 10 MiB + 1 B rounds to 10 MiB + 512 in a 12 MiB segment; 2 MiB - 512 remain (> 1 MiB): split, allocated
  // 10 MiB + 512. A 1.5 MiB tensor then best-fits that remainder; 512 KiB - 512 would be left (<= 1 MiB),
  // so it takes all 2 MiB - 512. Allocated 10 MiB + 512 + 2 MiB - 512 = 12 MiB, one segment.
  EXPECT_EQ(cudaLiveSet({10 * kMiB + 1, 1536 * kKiB}),
            (DeviceBytes{10 * kMiB + 1 + 1536 * kKiB, 12 * kMiB, 12 * kMiB, 1}));
  // Exactly 11 MiB in a 12 MiB segment: exactly 1 MiB would remain, not more, so no split: 12 MiB allocated.
  EXPECT_EQ(cudaLiveSet({11 * kMiB}), (DeviceBytes{11 * kMiB, 12 * kMiB, 12 * kMiB, 1}));
  // Exactly 10 MiB: a 10 MiB segment, nothing left.
  EXPECT_EQ(cudaLiveSet({10 * kMiB}), (DeviceBytes{10 * kMiB, 10 * kMiB, 10 * kMiB, 1}));
}

TEST(DeviceAllocator, PoolsDoNotShareSegments) {
  // A 512 KiB tensor cannot use the large pool's free 14 MiB: it opens a small segment.
  EXPECT_EQ(cudaLiveSet({6 * kMiB, 512 * kKiB}), (DeviceBytes{6656 * kKiB, 6656 * kKiB, 22 * kMiB, 2}));
}

}  // namespace
}  // namespace fs::fsdp_plan
