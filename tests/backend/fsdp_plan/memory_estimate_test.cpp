// Per-rank memory: exact model-state bytes for the tiny preset counted by
// hand, the gathered windows, and the 9B preset on 8 GPUs against the
// issue's hand count (reference ~8.7 GiB vs ours ~4.2 GiB of model state).
#include <gtest/gtest.h>

#include "backend/fsdp_plan/plan.h"
#include "plan_test_util.h"

namespace fs::fsdp_plan {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const PlanEntry& entry(const Plan& plan, const std::string& engine, const std::string& policy, Strategy s) {
  for (const auto& e : plan.entries) {
    if (e.engine == engine && e.policy == policy && e.strategy == s) return e;
  }
  ADD_FAILURE() << "no entry " << engine << " " << policy;
  return plan.entries.front();
}

Plan planFor(const protocol::RunConfig& c, Topology t) {
  PlanRequest req;
  req.config = c;
  req.topology = t;
  auto plan = makePlan(req);
  EXPECT_TRUE(plan.isOk()) << plan.status().message();
  return *plan;
}

// Tiny, openflamingo units (layout_test.cpp): root 4,224 frozen, vision
// 33,280 frozen, perceiver 8,576, embedding 4,160, gated blocks 8,322,
// decoder layers 8,544 frozen. 83,972 elements, 29,380 trainable.
TEST(MemoryEstimate, TinyModelStateIsExactInFloat32) {
  const auto plan = planFor(test::preset("tiny"), {2, 1});
  const auto& m = entry(plan, "ours", "openflamingo", Strategy::kFullShard).memory;
  EXPECT_EQ(m.parameters, 83972 / 2 * 4);  // every group even: no padding
  EXPECT_EQ(m.gradients, 29380 / 2 * 4);
  EXPECT_EQ(m.optimizer, 2 * 29380 / 2 * 4);

  // World 3: vision 11,094 (+2 pad), perceiver 2,859 (+1), embedding 1,387 (+1), the rest exact.
  const auto plan3 = planFor(test::preset("tiny"), {3, 1});
  const auto& m3 = entry(plan3, "ours", "openflamingo", Strategy::kFullShard).memory;
  const int64_t trainable = 2859 + 1387 + 2 * 2774;
  EXPECT_EQ(m3.parameters, (1408 + 11094 + trainable + 2 * 2848) * 4);
  EXPECT_EQ(m3.gradients, trainable * 4);
  EXPECT_EQ(m3.optimizer, 2 * trainable * 4);

  // no_shard: everything on every rank.
  const auto& n = entry(plan, "ours", "openflamingo", Strategy::kNoShard).memory;
  EXPECT_EQ(n.parameters, 83972 * 4);
  EXPECT_EQ(n.optimizer, 2 * 29380 * 4);
}

// NOTE [Replicated modes]: parallel.mode ddp holds the model as built. One
// process: every parameter, the trainable gradients, AdamW's two states, nothing
// gathered; DDP on several ranks also its gradient buckets (a second copy of the
// gradients). Not FSDP's frozen bf16 storage, and not in "all".
Plan planStrategies(const protocol::RunConfig& c, Topology t, std::vector<Strategy> strategies) {
  PlanRequest req;
  req.config = c;
  req.topology = t;
  req.strategies = std::move(strategies);
  req.policies = {"openflamingo"};
  req.reference = false;
  auto plan = makePlan(req);
  EXPECT_TRUE(plan.isOk()) << plan.status().message();
  return *plan;
}

TEST(MemoryEstimate, SingleProcessHoldsTheWholeModelItsGradientsAndAdamW) {
  for (const char* precision : {"fp32", "amp_bf16"}) {
    SCOPED_TRACE(precision);
    const auto plan = planStrategies(test::preset("tiny", {std::string("optim.precision=") + precision}),
                                     {1, 1}, {Strategy::kSingle});
    ASSERT_EQ(plan.entries.size(), 1u);
    const auto& e = plan.entries[0];
    EXPECT_EQ(e.shards.shardSize, 1);
    const auto& m = e.memory;
    EXPECT_EQ(m.parameters, 83972 * 4);  // frozen too, in float32 even under amp_bf16
    EXPECT_EQ(m.gradients, 29380 * 4);
    EXPECT_EQ(m.optimizer, 2 * 29380 * 4);
    EXPECT_EQ(m.gatheredPeak, 0);
    EXPECT_GT(m.activations, 0);
    // The tiny preset trains on generated shards: one worker per dataset, 2 batches prefetched
    // (NOTE [Loader memory]): LAION 4 x 1 and MMC4 2 x 2 pictures of 3 x 32 x 32 floats.
    const int64_t picture = 3 * 32 * 32 * 4;
    EXPECT_EQ(m.loader, (4 * picture) * (1 * 5 - 1) + (2 * 4 * 16 * 8) * 3 +      // laion
                            (4 * picture) * (1 * 5 - 1) + (2 * 2 * 48 * 8) * 3);  // mmc4
    EXPECT_EQ(m.peak(), m.modelState() + m.inputs + m.loader + m.stepPeak);
  }
}

// NOTE [Half weights need FSDP]: bf16 / fp16 without FSDP is refused (the engine casts no model), so the
// planner does not plan single / ddp with half weights; FSDP strategies still plan.
TEST(MemoryEstimate, ReplicatedModesRefuseHalfWeights) {
  for (const char* precision : {"bf16", "fp16"}) {
    for (const Strategy s : {Strategy::kSingle, Strategy::kDdp}) {
      PlanRequest req;
      req.config = test::preset("tiny", {std::string("optim.precision=") + precision});
      req.topology = {1, 1};
      req.strategies = {s};
      req.policies = {"openflamingo"};
      req.reference = false;
      const auto plan = makePlan(req);
      ASSERT_FALSE(plan.isOk()) << precision;
      EXPECT_NE(plan.status().message().find(std::string("optim.precision '") + precision + "'"),
                std::string::npos)
          << plan.status().message();
      EXPECT_NE(plan.status().message().find("amp_bf16"), std::string::npos) << plan.status().message();
    }
  }
  EXPECT_EQ(planStrategies(test::preset("tiny", {"optim.precision=bf16"}), {1, 1}, {Strategy::kFullShard})
                .entries.size(),
            1u);
}

TEST(MemoryEstimate, DdpAddsItsGradientBucketsOnSeveralRanks) {
  const auto c = test::preset("tiny");
  const auto one = planStrategies(c, {1, 1}, {Strategy::kSingle, Strategy::kDdp});
  ASSERT_EQ(one.entries.size(), 2u);
  // At world 1 the engine makes no GradientSync: ddp is single.
  EXPECT_EQ(one.entries[1].memory.gradients, one.entries[0].memory.gradients);
  EXPECT_EQ(one.entries[1].memory.peak(), one.entries[0].memory.peak());
  const auto four = planStrategies(c, {4, 2}, {Strategy::kDdp});
  const auto& m = four.entries[0].memory;
  EXPECT_EQ(m.parameters, 83972 * 4);  // replicated: the same on every rank
  EXPECT_EQ(m.gradients, 2 * 29380 * 4);
  EXPECT_EQ(m.optimizer, 2 * 29380 * 4);
  EXPECT_EQ(m.gatheredPeak, 0);
  EXPECT_EQ(m.peak(), one.entries[0].memory.peak() + 29380 * 4);
}

TEST(MemoryEstimate, ReplicatedModesAreAskedForByName) {
  const auto all = planFor(test::preset("tiny"), {2, 1});
  for (const auto& e : all.entries) EXPECT_FALSE(isReplicated(e.strategy)) << strategyName(e.strategy);
  PlanRequest req;
  req.config = test::preset("tiny");
  req.topology = {2, 1};
  req.strategies = {Strategy::kSingle};
  const auto plan = makePlan(req);
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(plan.status().message().find("--strategies: single is one process, but --world is 2"),
            std::string::npos)
      << plan.status().message();
}

TEST(MemoryEstimate, TinyUnderAmpStoresFrozenInBfloat16AndTheReferenceDoesNot) {
  const auto plan = planFor(test::preset("tiny", {"optim.precision=amp_bf16"}), {2, 1});
  const auto& ours = entry(plan, "ours", "openflamingo", Strategy::kFullShard).memory;
  EXPECT_EQ(ours.parameters, 29380 / 2 * 4 + 54592 / 2 * 2);
  EXPECT_EQ(ours.gradients, 29380 / 2 * 4);
  const auto& ref = entry(plan, "reference", "openflamingo", Strategy::kFullShard).memory;
  EXPECT_EQ(ref.parameters, 83972 / 2 * 4);
  EXPECT_EQ(ref.gradients, (29380 + 2 * 8544) / 2 * 4);  // + the unfrozen decoder layers
  EXPECT_EQ(ref.optimizer, 2 * 29380 / 2 * 4);
}

TEST(MemoryEstimate, GatheredWindowFollowsLimitAllGathers) {
  // fp32, world 2, openflamingo: units gathered in fp32 at full padded size. Private shards: prefetched
  // gathers are collectives.
  auto c = test::preset("tiny", {"parallel.limit_all_gathers=1", "parallel.backward_prefetch=none",
                                 "parallel.shared_shards=false"});
  auto plan = planFor(c, {2, 1});
  const auto& one = entry(plan, "ours", "openflamingo", Strategy::kFullShard).memory;
  // Root 4,224 stays gathered; the largest single unit is the vision tower (forward only).
  EXPECT_EQ(one.gatheredPeak, (4224 + 33280) * 4);
  c.parallel.limit_all_gathers = 2;
  plan = planFor(c, {2, 1});
  const auto& two = entry(plan, "ours", "openflamingo", Strategy::kFullShard).memory;
  EXPECT_EQ(two.gatheredPeak, (4224 + 33280 + 8576) * 4);
  // shard_grad_op: every unit in backward gathered at once plus the largest unsharded
  // gradient (the perceiver's) and the tied embedding's, held from the head on.
  const auto& sgo = entry(plan, "ours", "openflamingo", Strategy::kShardGradOp).memory;
  EXPECT_EQ(sgo.gatheredPeak, (4224 + 8576 + 4160 + 2 * 8322 + 2 * 8544 + 8576 + 4160) * 4);
}

TEST(MemoryEstimate, ShardGradOpWithCheckpointingHoldsOnlyUnitsOutsideCheckpointedRegions) {
  // A unit whose forward runs inside a checkpointed region (Perceiver, gated blocks, decoder layers)
  // built no graph and is freed after its forward: only the embedding unit is held to its backward.
  // Backward then peaks at a gated block (its unsharded gradient, gathered with the Perceiver) beside
  // the held embedding and its tied gradient: 4,160 + 8,322 + 4,160 + 8,322 + 8,576, below the
  // forward window of the vision tower and the Perceiver.
  auto c = test::preset("tiny", {"parallel.limit_all_gathers=2", "model.gradient_checkpointing=true",
                                 "parallel.shared_shards=false"});
  const auto plan = planFor(c, {2, 1});
  const auto& sgo = entry(plan, "ours", "openflamingo", Strategy::kShardGradOp).memory;
  EXPECT_EQ(sgo.gatheredPeak, (4224 + 33280 + 8576) * 4);
  // Without checkpointing every unit in backward is held at the turn (the test above).
  c.model.gradient_checkpointing = false;
  const auto held = planFor(c, {2, 1});
  EXPECT_EQ(entry(held, "ours", "openflamingo", Strategy::kShardGradOp).memory.gatheredPeak,
            (4224 + 8576 + 4160 + 2 * 8322 + 2 * 8544 + 8576 + 4160) * 4);
}

TEST(MemoryEstimate, NodeSharedShardsGatherOneUnitAtATime) {
  // NOTE [Node-shared shards]: over shared memory on one node nothing is prefetched, whatever the limit;
  // over Gloo only, the window is back.
  auto c = test::preset("tiny", {"parallel.limit_all_gathers=2"});
  ASSERT_TRUE(c.parallel.shared_shards);
  const auto oneNode = planFor(c, {2, 1});
  EXPECT_EQ(entry(oneNode, "ours", "openflamingo", Strategy::kFullShard).memory.gatheredPeak,
            (4224 + 33280) * 4);
  c.parallel.intra_node_transport = "gloo";
  const auto overGloo = planFor(c, {2, 1});
  EXPECT_EQ(entry(overGloo, "ours", "openflamingo", Strategy::kFullShard).memory.gatheredPeak,
            (4224 + 33280 + 8576) * 4);
}

TEST(MemoryEstimate, AutoBackendOnCudaIsPlannedAsNccl) {
  // dist_backend auto means NCCL when the ranks train on CUDA (Trainer::deviceBackend): no shared-memory
  // transport and no node-shared shards, so the prefetch window is back, as for an explicit nccl.
  auto c = test::preset("tiny", {"parallel.limit_all_gathers=2"});
  const int64_t sharedWindow = (4224 + 33280) * 4, prefetchWindow = (4224 + 33280 + 8576) * 4;
  const auto peak = [&](const std::string& device, const std::string& backend) {
    c.parallel.device = device;
    c.parallel.dist_backend = backend;
    return entry(planFor(c, {2, 1}), "ours", "openflamingo", Strategy::kFullShard).memory;
  };
  EXPECT_EQ(peak("cpu", "auto").gatheredPeak, sharedWindow);
  EXPECT_EQ(peak("auto", "auto").gatheredPeak, sharedWindow);
  const auto autoOnCuda = peak("cuda", "auto");
  const auto ncclOnCuda = peak("cuda", "nccl");
  EXPECT_EQ(autoOnCuda.gatheredPeak, prefetchWindow);
  EXPECT_EQ(autoOnCuda.gatheredPeak, ncclOnCuda.gatheredPeak);
  EXPECT_EQ(autoOnCuda.peak(), ncclOnCuda.peak());
  EXPECT_EQ(peak("cuda", "gloo").gatheredPeak, sharedWindow);
}

TEST(MemoryEstimate, NineBOnEightGpusMatchesTheHandCount) {
  // Issue 8: ~8.7 GiB (reference: fp32 flat parameters, gradients for the
  // unfrozen decoder layers) vs ~4.2 GiB (ours) of model state per GPU.
  const auto plan = planFor(test::preset("openflamingo-9b-vitl-mpt7b"), {8, 1});
  const auto& ours = entry(plan, "ours", "openflamingo", Strategy::kFullShard).memory;
  const auto& ref = entry(plan, "reference", "openflamingo", Strategy::kFullShard).memory;
  EXPECT_NEAR(static_cast<double>(ours.modelState()) / kGiB, 4.15, 0.05);
  EXPECT_NEAR(static_cast<double>(ref.modelState()) / kGiB, 8.72, 0.05);
  // Parameters: 1.385B fp32 + 6.745B bf16 over 8 vs 8.13B fp32 over 8.
  EXPECT_NEAR(static_cast<double>(ours.parameters) / kGiB, 2.22, 0.01);
  EXPECT_NEAR(static_cast<double>(ref.parameters) / kGiB, 3.79, 0.01);
  EXPECT_EQ(ours.optimizer, ref.optimizer);
}

TEST(MemoryEstimate, ActivationsShrinkWithCheckpointing) {
  const auto plan = planFor(test::preset("small"), {1, 1});
  EXPECT_GT(plan.activations.withoutCheckpointing, plan.activations.withCheckpointing);
  ASSERT_EQ(plan.activations.datasets.size(), 2u);
  EXPECT_EQ(plan.activations.datasets[0].tokens, 32);   // laion default
  EXPECT_EQ(plan.activations.datasets[1].tokens, 128);  // small's mmc4 max_tokens
  EXPECT_EQ(plan.activations.datasets[1].images, 3);
}

// NOTE [Activation formula], two paths: a batch computes every position, or, with at least 2^18 / d^2
// positions padded (small's width 256: 4), skips them; the most it then holds is with exactly 4 padded
// and every sequence full but one. Both paths are planned; measured per operator on OPT
// (fsdp_peak_probe --live-at-peak).
TEST(MemoryEstimate, BothPathsThroughTheLanguageModelArePlanned) {
  auto mmc4 = [](int64_t batch, int64_t tokens, const std::string& family, Dtype dtype) {
    protocol::RunConfig c = test::preset("small");
    c.model.lm.family = family;
    c.data.datasets[1].batch_size = batch;
    c.data.datasets[1].max_tokens = tokens;
    return estimateActivations(c, dtype).datasets[1];
  };
  const int64_t d = 256, f = 1024, h = 4, v = 1026;
  // 1 x 4 positions cannot skip 4 and keep a real token: one path.
  const auto alone = mmc4(1, 4, "opt", Dtype::kFloat32);
  ASSERT_EQ(alone.paths.size(), 1u);
  EXPECT_EQ(alone.paths[0].decoderLayer, (4 * (7 * d + f) + 4 * h * 4) * 4);

  // Small's MMC4 batch, 4 x 128: 508 real tokens when padding is skipped (128, 128, 128, 124).
  const auto opt = mmc4(4, 128, "opt", Dtype::kFloat32);
  ASSERT_EQ(opt.paths.size(), 2u);
  const auto& every = opt.paths[0];
  const auto& skip = opt.paths[1];
  EXPECT_EQ(every.decoderLayer, (512 * (7 * d + f) + 512 * h * 128) * 4);
  // A decoder layer's backward at its MLP: relu's two f-wide gradients per real token beside the residual
  // stream's gradient in and out; larger than the attention's here.
  EXPECT_EQ(every.decoderLayerBackward, (512 * 2 * f + 2 * 512 * d) * 4);
  // Packed float32 attention: the input and two dropout masks per position, 7 d + relu per real token,
  // probabilities per sample.
  EXPECT_EQ(skip.decoderLayer, (512 * 3 * d + 508 * (7 * d + f) + h * (3 * 128 * 128 + 124 * 124)) * 4);
  EXPECT_EQ(skip.decoderLayerBackward, (508 * 2 * f + 2 * 512 * d) * 4);
  // A gated block's feed-forward, and its attention's norm and to_out, on the real tokens (ix = 128, 4
  // heads over M = 3 x 16 media tokens).
  EXPECT_EQ(skip.gatedBlock, (512 * (2 * d + 128 + 2 * 4 * 48) + 508 * (2 * d + 128) +
                              508 * (2 * d + 2 * 4 * d) + 4 * 2 * 48 * 128) *
                                 4);
  EXPECT_EQ(every.gatedBlock, (512 * (6 * d + 2 * 128 + 2 * 4 * d + 2 * 4 * 48) + 4 * 2 * 48 * 128) * 4);
  // Ours: the head's product at the targets, at most one per real token, inside the head's unit
  // (NOTE [Logits at the targets]); after it its log-softmax, and backward the loss and log-softmax
  // gradients.
  EXPECT_EQ(skip.headInUnitForward, 508 * v * 4);
  EXPECT_EQ(every.headInUnitForward, 512 * v * 4);
  EXPECT_EQ(skip.headForward, 508 * v * (4 + 4));
  EXPECT_EQ(skip.headBackward, 508 * v * (4 + 4));
  // The reference: the product on the real tokens and its scatter to every position, inside the unit.
  protocol::RunConfig c = test::preset("small");
  c.data.datasets[1].batch_size = 4;
  c.data.datasets[1].max_tokens = 128;
  const auto reference = estimateActivations(c, Dtype::kFloat32, HeadLogits::kEveryPosition).datasets[1];
  ASSERT_EQ(reference.paths.size(), 2u);
  EXPECT_EQ(reference.paths[1].headInUnitForward, (508 + 512) * v * 4);
  EXPECT_EQ(reference.paths[0].headInUnitForward, 2 * 512 * v * 4);
  EXPECT_GT(reference.withoutCheckpointing, opt.withoutCheckpointing);
  EXPECT_GT(opt.withoutCheckpointing, 0);

  // The composite attention (MPT's ALiBi; any 16-bit compute) keeps 10 d per position, and the MLP part
  // (2 d + MLP) per real token; MPT's MLP keeps 2 f.
  const auto mpt = mmc4(4, 128, "mpt", Dtype::kFloat32);
  ASSERT_EQ(mpt.paths.size(), 2u);
  EXPECT_EQ(mpt.paths[1].decoderLayer, (512 * 10 * d + 508 * (2 * d + 2 * f) + 512 * h * 128) * 4);
  EXPECT_EQ(mpt.paths[1].decoderLayerBackward, (508 * 2 * f + 2 * 512 * d) * 4);
  // Where the attention's backward is the larger: the packed one's dq, dk, dv with a narrow MLP.
  {
    protocol::RunConfig c = test::preset("small");
    c.model.lm.ffn_dim = 32;
    c.data.datasets[1].max_tokens = 128;
    const auto& narrow = estimateActivations(c, Dtype::kFloat32).datasets[1].paths;
    ASSERT_EQ(narrow.size(), 2u);
    EXPECT_EQ(narrow[0].decoderLayerBackward, (2 * 512 * h * 128 + 2 * 512 * d) * 4);
    EXPECT_EQ(narrow[1].decoderLayerBackward, 3 * 508 * d * 4);
  }
  // bf16: probabilities in fp32 plus the bf16 copy (4 + 2 bytes per element of 2).
  const auto bf16 = mmc4(4, 128, "opt", Dtype::kBFloat16);
  EXPECT_EQ(bf16.paths[1].decoderLayer, (512 * 10 * d + 508 * (2 * d + f) + 512 * h * 128 * 3) * 2);
}

}  // namespace
}  // namespace fs::fsdp_plan
