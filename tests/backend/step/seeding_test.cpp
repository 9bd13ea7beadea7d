#include "backend/step/seeding.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace fs::step {
namespace {

TEST(Seeding, SameSeedSameModelInitDifferentRanksDiffer) {
  protocol::RunConfig c;
  c.seed = 42;
  seedForModelInit(c);
  const auto a = torch::randn({8});
  const auto ownA = trainRng().nextU64();
  seedForModelInit(c);
  EXPECT_TRUE(torch::equal(a, torch::randn({8})));
  EXPECT_EQ(trainRng().nextU64(), ownA);

  seedForRank(c, 0);
  const auto r0 = torch::randn({8});
  seedForRank(c, 1);
  const auto r1 = torch::randn({8});
  EXPECT_FALSE(torch::equal(r0, r1));
  EXPECT_TRUE(torch::equal(r0, a)) << "rank 0 uses seed + 0";
}

TEST(Seeding, SnapshotRestoresEveryGenerator) {
  seedEverything(7);
  torch::randn({3});
  const RngSnapshot snap = captureRng();
  const auto t1 = torch::randn({16});
  const auto u1 = trainRng().nextU64();
  const auto d1 = torch::dropout(torch::ones({32}), 0.5, true);
  ASSERT_TRUE(restoreRng(snap).isOk());
  EXPECT_TRUE(torch::equal(torch::randn({16}), t1));
  EXPECT_EQ(trainRng().nextU64(), u1);
  EXPECT_TRUE(torch::equal(torch::dropout(torch::ones({32}), 0.5, true), d1));
  EXPECT_FALSE(snap.torchCpu.empty());
}

TEST(Seeding, MalformedSnapshotIsRefused) {
  RngSnapshot bad = captureRng();
  bad.torchCpu.resize(10);
  EXPECT_FALSE(restoreRng(bad).isOk());
  RngSnapshot moreCuda = captureRng();
  moreCuda.torchCuda.emplace_back(16, 0);
  EXPECT_FALSE(restoreRng(moreCuda).isOk());
}

}  // namespace
}  // namespace fs::step
