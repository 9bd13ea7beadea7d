// NOTE [Our parallel loops], NOTE [One BLAS thread per block]: our kernels'
// loops really run on the intra-op threads, inside them BLAS runs on one
// thread and outside it keeps every intra-op thread, and the kernels give the
// same bits at 1 and 2 intra-op threads.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <vector>

#include "backend/model/dropout.h"
#include "backend/model/intra_op.h"
#include "backend/model/packed_attention.h"
#include "backend/model/row_major_gemm.h"
#include "backend/model/slot_attention.h"

namespace fs::model {
namespace {

// Restores the intra-op thread count a test changed.
struct IntraOpThreads {
  explicit IntraOpThreads(int n) : before(at::get_num_threads()) { at::set_num_threads(n); }
  ~IntraOpThreads() { at::set_num_threads(before); }
  int before;
};

TEST(SerialBlas, TheWheelsBlasHasAPerThreadSetting) {
#if defined(__x86_64__)
  // PyTorch's x86 wheels carry MKL (NOTE [One BLAS]): without it the scope would do nothing here.
  EXPECT_GT(blasThreadsForThisThread(), 0);
#else
  GTEST_SKIP() << "MKL is in PyTorch's x86 wheels only";
#endif
}

TEST(SerialBlas, OutsideAParallelRegionTheScopeLeavesBlasAlone) {
  const IntraOpThreads threads(2);
  const int before = blasThreadsForThisThread();
  {
    const SerialBlasInParallelRegion scope;
    EXPECT_FALSE(scope.active());
    EXPECT_EQ(blasThreadsForThisThread(), before);
  }
  EXPECT_EQ(blasThreadsForThisThread(), before);
}

TEST(SerialBlas, InsideAParallelRegionBlasIsSerialAndRestoredAfter) {
  if (blasThreadsForThisThread() == 0) GTEST_SKIP() << "no MKL in this LibTorch";
  const IntraOpThreads threads(2);
  const int outside = blasThreadsForThisThread();
  EXPECT_EQ(outside, 2);
  std::atomic<int> chunks{0}, inParallel{0}, serial{0}, restored{0};
  parallelFor(0, 2, 1, [&](int64_t, int64_t) {
    ++chunks;
    const int before = blasThreadsForThisThread();
    {
      const SerialBlasInParallelRegion scope;
      inParallel += at::in_parallel_region() ? 1 : 0;
      serial += scope.active() && blasThreadsForThisThread() == 1 ? 1 : 0;
    }
    restored += blasThreadsForThisThread() == before ? 1 : 0;
  });
  EXPECT_EQ(chunks.load(), 2);
  EXPECT_EQ(inParallel.load(), 2) << "parallelFor ran its chunks outside a parallel region";
  EXPECT_EQ(serial.load(), 2);
  EXPECT_EQ(restored.load(), 2);
  EXPECT_EQ(blasThreadsForThisThread(), outside);

  std::atomic<int> serialBlas{0};
  parallelForSerialBlas(0, 2, 1,
                        [&](int64_t, int64_t) { serialBlas += blasThreadsForThisThread() == 1 ? 1 : 0; });
  EXPECT_EQ(serialBlas.load(), 2);
  EXPECT_EQ(blasThreadsForThisThread(), outside);
}

TEST(SerialBlas, ParallelForRunsItsChunksOnDistinctThreads) {
  const IntraOpThreads threads(2);
  std::atomic<int> inlineNested{0};
  std::vector<int> thread(2, -1);
  parallelFor(0, 2, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) thread[static_cast<size_t>(i)] = at::get_thread_num();
  });
  EXPECT_EQ(thread[0], 0);
  EXPECT_EQ(thread[1], 1) << "the second chunk ran on the calling thread: no parallel region";
  // Inside a region, a nested call runs inline on the calling thread.
  parallelFor(0, 2, 1, [&](int64_t, int64_t) {
    int calls = 0;
    parallelFor(0, 4, 1, [&](int64_t, int64_t) { ++calls; });
    if (calls == 1) ++inlineNested;
  });
  EXPECT_EQ(inlineNested.load(), 2);
}

// Slot attention forward and backward: 8 heads of 64, 3 slots of 16 latents, runs of uneven length.
std::vector<torch::Tensor> slotAttentionAt(int threads) {
  const IntraOpThreads scope(threads);
  torch::manual_seed(9);
  const std::vector<SlotRun> runs{{0, 40, 0}, {40, 7, 1}, {47, 90, 2}, {137, 3, 0}};
  auto q = torch::randn({140, 512}).requires_grad_(true);
  auto k = torch::randn({48, 512}).requires_grad_(true);
  auto v = torch::randn({48, 512}).requires_grad_(true);
  const auto upstream = torch::randn({140, 512});
  const auto out = slotAttention(q, k, v, 8, 16, 0.125, runs);
  (out * upstream).sum().backward();
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

TEST(SerialBlas, SlotAttentionGivesTheSameBitsAtOneAndTwoThreads) {
  const auto one = slotAttentionAt(1);
  const auto two = slotAttentionAt(2);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(torch::equal(one[i], two[i])) << "tensor " << i;
}

TEST(SerialBlas, DropoutGivesTheSameBitsAtOneAndTwoThreads) {
  const auto run = [](int threads) {
    const IntraOpThreads scope(threads);
    torch::manual_seed(11);
    auto x = torch::randn({4, 1 << 15}).requires_grad_(true);
    const auto out = applyDropout(x, 0.1, true);
    out.sum().backward();
    return std::vector<torch::Tensor>{out.detach(), x.grad()};
  };
  const auto one = run(1), two = run(2);
  EXPECT_TRUE(torch::equal(one[0], two[0]));
  EXPECT_TRUE(torch::equal(one[1], two[1]));
}

// Packed attention forward and backward on LAION- and MMC4-like packings.
std::vector<torch::Tensor> attentionAt(int threads, const std::vector<int64_t>& offsets) {
  const IntraOpThreads scope(threads);
  torch::manual_seed(7);
  const int64_t n = offsets.back();
  auto q = torch::randn({n, 128}).requires_grad_(true);
  auto k = torch::randn({n, 128}).requires_grad_(true);
  auto v = torch::randn({n, 128}).requires_grad_(true);
  const auto upstream = torch::randn({n, 128});
  const auto out = packedCausalAttention(q, k, v, 4, 0.125, offsets);
  (out * upstream).sum().backward();
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

TEST(SerialBlas, PackedAttentionGivesTheSameBitsAtOneAndTwoThreads) {
  for (const std::vector<int64_t>& offsets : {std::vector<int64_t>{0, 20, 41, 60, 78, 99, 118, 140, 160},
                                              std::vector<int64_t>{0, 120, 215, 340, 452}}) {
    const auto one = attentionAt(1, offsets);
    const auto two = attentionAt(2, offsets);
    for (size_t i = 0; i < one.size(); ++i)
      EXPECT_TRUE(torch::equal(one[i], two[i])) << "tensor " << i << " of " << offsets.back() << " rows";
  }
}

}  // namespace
}  // namespace fs::model
