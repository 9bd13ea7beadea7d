// Shard math by hand: padding for odd sizes over 1-4 ranks, the shard group
// of each strategy (hybrid: inside a node), topology errors, and the flat
// groups of a unit (ours: frozen and trainable apart; reference: one).
#include "backend/fsdp_plan/sharding.h"

#include <gtest/gtest.h>

#include "plan_test_util.h"

namespace fs::fsdp_plan {
namespace {

TEST(Sharding, PaddingForOddSizesOverOneToFourRanks) {
  // 7 elements: 7 | 4+4 (1 pad) | 3+3+3 (2 pad) | 2+2+2+2 (1 pad).
  const int64_t shard[] = {7, 4, 3, 2};
  const int64_t padding[] = {0, 1, 2, 1};
  for (int s = 1; s <= 4; ++s) {
    EXPECT_EQ(shardNumel(7, s), shard[s - 1]) << s;
    EXPECT_EQ(paddingNumel(7, s), padding[s - 1]) << s;
  }
  EXPECT_EQ(shardNumel(8321, 3), 2774);  // 3 x 2774 = 8322
  EXPECT_EQ(paddingNumel(8321, 3), 1);
  EXPECT_EQ(shardNumel(1, 4), 1);  // one element: each rank holds one, three are padding
  EXPECT_EQ(paddingNumel(1, 4), 3);
}

TEST(Sharding, ShardGroupPerStrategy) {
  const Topology t{8, 2};
  EXPECT_EQ(shardGroupSize(Strategy::kFullShard, t), 8);
  EXPECT_EQ(shardGroupSize(Strategy::kShardGradOp, t), 8);
  EXPECT_EQ(shardGroupSize(Strategy::kHybridShard, t), 4);
  EXPECT_EQ(shardGroupSize(Strategy::kNoShard, t), 1);
  EXPECT_EQ(shardGroupSize(Strategy::kSingle, t), 1);
  EXPECT_EQ(shardGroupSize(Strategy::kDdp, t), 1);
}

TEST(Sharding, ReplicatedStrategiesAreNamedButNotInAll) {
  EXPECT_EQ(*strategyFromName("single", "--strategies"), Strategy::kSingle);
  EXPECT_EQ(*strategyFromName("ddp", "--strategies"), Strategy::kDdp);
  EXPECT_EQ(strategyName(Strategy::kDdp), "ddp");
  EXPECT_TRUE(isReplicated(Strategy::kSingle) && isReplicated(Strategy::kDdp));
  EXPECT_FALSE(isReplicated(Strategy::kNoShard));
  EXPECT_EQ(fsdpStrategyNames(),
            (std::vector<std::string>{"full_shard", "shard_grad_op", "hybrid_shard", "no_shard"}));
}

TEST(Sharding, TopologyErrorsNameTheFlags) {
  EXPECT_TRUE(checkTopology({4, 2}).isOk());
  const auto bad = checkTopology({6, 4});
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("--world 6"), std::string::npos);
  EXPECT_NE(bad.message().find("--nodes 4"), std::string::npos);
  EXPECT_NE(checkTopology({2, 3}).message().find("--nodes"), std::string::npos);
  EXPECT_NE(checkTopology({0, 1}).message().find("--world"), std::string::npos);
  EXPECT_NE(strategyFromName("zero3", "--strategies")
                .status()
                .message()
                .find("--strategies: unknown sharding strategy 'zero3'"),
            std::string::npos);
}

// Tiny with a FlamingoLayer unit: gated block (8,322 trainable) + decoder layer (8,544 frozen).
TEST(Sharding, FrozenAndTrainableAreSeparateGroupsWithTheirOwnPadding) {
  const auto c = test::preset(
      "tiny", {"parallel.wrap_policy=custom", "parallel.wrap_patterns=[lang_encoder.model.decoder.layers.*]",
               "optim.precision=amp_bf16"});
  auto inv = buildParamInventory(c.model);
  const auto prec = *oursPrecision(c);
  auto layout = buildLayout(*inv, *wrapPolicyFromConfig(c.parallel), prec);
  ASSERT_TRUE(layout.isOk());
  ASSERT_EQ(layout->units.size(), 3u);
  const auto& unit = layout->units[1];
  ASSERT_EQ(unit.path, "lang_encoder.model.decoder.layers.0");
  for (int64_t world = 1; world <= 4; ++world) {
    const auto plan = planShards(*layout, prec, Strategy::kFullShard, {world, 1});
    const auto& groups = plan.units[1].groups;
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_TRUE(groups[0].trainable);
    EXPECT_EQ(groups[0].numel, 8322);
    EXPECT_EQ(groups[0].shardNumel, (8322 + world - 1) / world);
    EXPECT_EQ(groups[0].storage, Dtype::kFloat32);
    EXPECT_FALSE(groups[1].trainable);
    EXPECT_FALSE(groups[1].gradients);
    EXPECT_EQ(groups[1].numel, 8544);
    EXPECT_EQ(groups[1].storage, Dtype::kBFloat16);
    EXPECT_EQ(plan.units[1].shardBytes(), groups[0].shardNumel * 4 + groups[1].shardNumel * 2);
  }
  // World 3: 8322 = 3 x 2774 exactly, 8544 = 3 x 2848 exactly; world 4: 2081 (2 pad) and 2136.
  auto plan = planShards(*layout, prec, Strategy::kFullShard, {4, 1});
  EXPECT_EQ(plan.units[1].groups[0].padding, 2);
  EXPECT_EQ(plan.units[1].groups[1].padding, 0);
  EXPECT_EQ(plan.units[1].shardBytes(), 2081 * 4 + 2136 * 2);
  // Hybrid 4 ranks on 2 nodes: shards of 2.
  plan = planShards(*layout, prec, Strategy::kHybridShard, {4, 2});
  EXPECT_EQ(plan.shardSize, 2);
  EXPECT_EQ(plan.units[1].shardBytes(), 4161 * 4 + 4272 * 2);
  // The reference: one flat parameter per unit, float32.
  auto ref = buildReferenceLayout(*inv, prec);
  const auto refPlan = planShards(*ref, referencePrecision(prec), Strategy::kFullShard, {3, 1}, true);
  for (const auto& u : refPlan.units) EXPECT_EQ(u.groups.size(), 1u);
  // Vision encoder unit, 33,280 over 3: 11,094 each, 2 padding.
  EXPECT_EQ(refPlan.units[1].groups[0].shardNumel, 11094);
  EXPECT_EQ(refPlan.units[1].groups[0].padding, 2);
}

}  // namespace
}  // namespace fs::fsdp_plan
