// GradientSync::broadcastFromRank0 on 2 and 3 thread ranks over real Gloo:
// every rank ends with rank 0's values, whatever the chunking (tensors
// coalesced across chunk boundaries, a large one in place, a non-contiguous
// one, float32 beside bfloat16), and the tensors keep their storage.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>

#include "backend/distributed/gradient_sync.h"
#include "tests/backend/distributed/thread_ranks.h"

namespace fs::distributed {
namespace {

// Rank r's tensors: the same shapes everywhere, values that differ by rank.
std::vector<torch::Tensor> tensorsOf(int rank) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16);
  const double r = rank;
  return {
      torch::full({1}, r, f32),           torch::arange(7, f32) + r,
      torch::full({5, 6}, r + 0.5, bf16), (torch::arange(300, f32) * (r + 1)).view({20, 15}),
      torch::full({3}, -r, f32),          (torch::arange(12, f32) + r).view({3, 4}).t(),  // not contiguous
      torch::full({40}, r + 2, bf16)};
}

TEST(BroadcastFromRank0, EveryRankEndsWithRankZerosValues) {
  for (int world : {2, 3}) {
    // 64 bytes: the 300-element tensor goes alone in place, the small ones share chunks.
    for (int64_t chunk : {int64_t{64}, int64_t{64} << 20}) {
      std::mutex mu;
      const auto errors = testing::runThreadRanks(world, [&](Communicator& comm) {
        auto mine = tensorsOf(comm.rank());
        std::vector<const void*> storage;
        for (const auto& t : mine) storage.push_back(t.data_ptr());
        GradientSync::broadcastFromRank0(comm, mine, "test broadcast", chunk);
        const auto want = tensorsOf(0);
        std::lock_guard<std::mutex> lock(mu);
        for (size_t i = 0; i < mine.size(); ++i) {
          EXPECT_TRUE(torch::equal(mine[i], want[i]))
              << "world " << world << " chunk " << chunk << " rank " << comm.rank() << " tensor " << i;
          EXPECT_EQ(mine[i].data_ptr(), storage[i]) << "tensor " << i << " was replaced, not filled";
        }
      });
      for (const auto& e : errors) ASSERT_EQ(e, "") << "world " << world << " chunk " << chunk;
    }
  }
}

}  // namespace
}  // namespace fs::distributed
