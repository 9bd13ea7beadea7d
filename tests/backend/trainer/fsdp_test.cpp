// FSDP on real flamingo-train processes on loopback (parallel.mode = fsdp):
//  - every strategy and every wrap policy trains as one process does (fp32,
//    10 steps, losses and final trainable parameters within 1e-5 relative),
//    on 2 and 3 ranks and on 2 "nodes" x 2 for hybrid_shard, with gradient
//    accumulation, activation checkpointing, a unit mixing frozen and
//    trainable parameters, tied and untied heads; units are reduced during
//    backward from the second step on;
//  - the layout event holds exactly the planner's shard bytes per unit and
//    rank (3 ranks: parameter counts not divisible by 3, so padding);
//  - only the Perceiver, the cross-attention blocks and the two new
//    embedding rows change;
//  - a NaN on one rank skips the step on every rank;
//  - parallel.cpu_offload trains bit for bit like shards kept in place;
//  - checkpoints: the single-process file (bitwise at world 1), resumed on
//    other world sizes and modes, and a save / restart bitwise equal to the
//    uninterrupted run under full_shard, shard_grad_op, no_shard and
//    hybrid_shard.
// The LM is LLaMA-shaped: OPT's dropout would make ranks differ from one
// process by design.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "backend/fsdp_plan/layout.h"
#include "backend/fsdp_plan/memory_estimate.h"
#include "backend/fsdp_plan/sharding.h"
#include "backend/model/flamingo.h"
#include "backend/step/seeding.h"
#include "tests/backend/checkpoint/checkpoint_compare.h"
#include "tests/backend/trainer/planned_layout_check.h"
#include "tests/backend/trainer/rank_runs.h"

namespace fs::trainer {
namespace {

using checkpoint::test::expectBitwiseEqual;
using test::expectPlannedLayout;
using test::expectSameRun;
using test::layoutOf;
using test::RunOutput;
using Env = std::map<int, std::map<std::string, std::string>>;
// Per tensor: NOTE [Tensor tolerance] in rank_runs.h; all tensors together stay within 1e-5.
constexpr double kTensorRel = 1e-4;

class FsdpTest : public test::RankRunTest {
 protected:
  std::string prefix() const override { return "fs-fsdp"; }

  // Global batches of 12 LAION and 12 MMC4 samples over `world` ranks on
  // `nodes` nodes; 10 optimizer steps.
  protocol::RunConfig config(int world, std::vector<std::string> extra = {}, int nodes = 1) {
    auto sets = test::rankRunSets(world, 12, 12, 10);
    sets.insert(sets.end(), {"launch.nproc_per_node=" + std::to_string(world / nodes),
                             "launch.nnodes=" + std::to_string(nodes), "parallel.mode=fsdp"});
    // Several nodes are a cluster launch; the test starts the ranks itself, with torchrun's variables.
    if (nodes > 1) sets.push_back("launch.kind=external");
    sets.insert(sets.end(), extra.begin(), extra.end());
    return test::tinyConfig(sets);
  }
  // One process, no sharding: the reference every FSDP run is held to.
  protocol::RunConfig single(std::vector<std::string> extra = {}) {
    auto c = config(1, extra);
    c.parallel.mode = "ddp";
    return c;
  }
  void expectRestartIsBitwise(const std::string& strategy, int world, int nodes);
  // Rank r on node r / perNode: torchrun's local variables.
  static Env nodes(int world, int perNode) {
    Env env;
    for (int r = 0; r < world; ++r) {
      env[r] = {{"LOCAL_RANK", std::to_string(r % perNode)}, {"LOCAL_WORLD_SIZE", std::to_string(perNode)}};
    }
    return env;
  }
};

// The gradient-flow check (first step, on every rank's gradients before the reduce-scatter) found no
// gradient on a frozen parameter and none missing on a trainable one.
void expectCleanGradientFlow(const RunOutput& r, const std::string& what) {
  for (const auto& e : r.events) {
    if (const auto* w = std::get_if<protocol::WarningEvent>(&e.body)) {
      EXPECT_NE(w->code, "grad_on_frozen") << what << ": " << w->message;
      EXPECT_NE(w->code, "grad_missing") << what << ": " << w->message;
    }
  }
}

// The most units gathered at once on every rank, from the memory events (NOTE [Prefetch and the gather
// limit]): never more than the layout's limit; `expected` is what a steady step reaches.
void expectGatherLimit(const RunOutput& r, int expected, const std::string& what) {
  const auto* layout = layoutOf(r);
  ASSERT_NE(layout, nullptr) << what;
  int most = 0, reports = 0;
  for (const auto& e : r.events) {
    const auto* m = std::get_if<protocol::MemoryEvent>(&e.body);
    if (!m) continue;
    for (const auto& rank : m->ranks) {
      ASSERT_TRUE(rank.gathered_units.has_value()) << what << ": rank " << rank.rank << " step " << m->step;
      EXPECT_LE(*rank.gathered_units, layout->max_units_gathered) << what << ": rank " << rank.rank;
      // Which units: that many distinct layout units (gather_order values), never the root (0).
      const auto& at = rank.gathered_at_peak;
      EXPECT_EQ(at.size(), static_cast<size_t>(*rank.gathered_units)) << what << ": rank " << rank.rank;
      EXPECT_TRUE(std::is_sorted(at.begin(), at.end()) &&
                  std::adjacent_find(at.begin(), at.end()) == at.end())
          << what << ": rank " << rank.rank;
      for (int u : at) {
        EXPECT_GT(u, 0) << what << ": rank " << rank.rank;
        EXPECT_LT(u, static_cast<int>(layout->units.size())) << what << ": rank " << rank.rank;
      }
      most = std::max(most, *rank.gathered_units);
      ++reports;
      // NOTE [Step peak]: every step but the first (the set-up's interval) has one, gathered per rank.
      if (m->step > 1) {
        ASSERT_TRUE(rank.step_peak.has_value()) << what << ": rank " << rank.rank << " step " << m->step;
        EXPECT_GE(*rank.step_peak, rank.params + rank.optimizer) << what << ": rank " << rank.rank;
      }
      // NOTE [Device figures per rank]: a CPU run carries none (their slots travel before the units').
      EXPECT_TRUE(rank.device.empty() && !rank.device_bytes && !rank.device_reserved &&
                  rank.device_phases.empty())
          << what << ": rank " << rank.rank;
    }
  }
  EXPECT_GT(reports, 0) << what << ": no memory event";
  EXPECT_EQ(most, expected) << what;
}

// The rank's log (logs/rank-<r>.log), whole.
std::string rankLog(const RunOutput& r, int rank) {
  std::ifstream f(r.dir / "logs" / ("rank-" + std::to_string(rank) + ".log"));
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST_F(FsdpTest, EveryStrategyTrainsAsOneProcess) {
  const RunOutput one = run("single", 1, single());
  ASSERT_EQ(one.losses.size(), 10u);
  for (const std::string strategy : {"full_shard", "shard_grad_op", "no_shard"}) {
    const auto cfg = config(2, {"parallel.sharding_strategy=" + strategy});
    const RunOutput two = run(strategy, 2, cfg);
    expectSameRun(one, two, strategy + " on 2 ranks", 1e-5, kTensorRel);
    expectCleanGradientFlow(two, strategy);
    expectPlannedLayout(two, cfg, *fsdp_plan::strategyFromName(strategy, "strategy"), 2, 1);
  }
  // Without prefetch and with a limit of one unit: the same run, one unit gathered at a time.
  const RunOutput serial =
      run("serial", 2,
          config(2, {"parallel.forward_prefetch=false", "parallel.backward_prefetch=none",
                     "parallel.limit_all_gathers=1"}));
  expectSameRun(one, serial, "full_shard without prefetch", 1e-5, kTensorRel);
  expectGatherLimit(serial, 1, "without prefetch");

  // Prefetch is for gathers that are collectives: private shards. Node-shared ones (the default over shared
  // memory) copy a unit when it is needed, one at a time (NOTE [Node-shared shards]).
  const auto cfg3 = config(3, {"parallel.shared_shards=false"});
  const RunOutput three = run("full_shard_3", 3, cfg3);
  expectGatherLimit(three, 2, "full_shard on 3 ranks with prefetch (limit 2)");
  expectSameRun(one, three, "full_shard on 3 ranks", 1e-5, kTensorRel);
  const RunOutput threeShared = run("full_shard_3_shared", 3, config(3));
  expectGatherLimit(threeShared, 1, "full_shard on 3 ranks with node-shared shards");
  expectSameRun(one, threeShared, "full_shard on 3 ranks with node-shared shards", 1e-5, kTensorRel);
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(rankLog(threeShared, r).find("FSDP shards: node-shared"), std::string::npos) << "rank " << r;
    EXPECT_NE(rankLog(three, r).find("FSDP shards: private (turned off"), std::string::npos) << "rank " << r;
  }
  expectPlannedLayout(three, cfg3, fsdp_plan::Strategy::kFullShard, 3, 1);
  int64_t padding = 0;
  for (const auto& u : layoutOf(three)->units) padding += u.padding_elems;
  EXPECT_GT(padding, 0) << "the tiny model's units should not all divide by 3";

  const auto cfgHybrid = config(4, {"parallel.sharding_strategy=hybrid_shard"}, 2);
  const RunOutput hybrid = run("hybrid", 4, cfgHybrid, nodes(4, 2));
  expectSameRun(one, hybrid, "hybrid_shard on 2 nodes x 2", 1e-5, kTensorRel);
  expectPlannedLayout(hybrid, cfgHybrid, fsdp_plan::Strategy::kHybridShard, 4, 2);
}

TEST_F(FsdpTest, EveryWrapPolicyTrainsAsOneProcess) {
  const RunOutput one = run("single", 1, single());
  const std::vector<std::vector<std::string>> policies = {
      {"parallel.wrap_policy=transformer_layer"},
      // Nested units: the vision tower around its blocks, ...
      {"parallel.wrap_policy=size_based", "parallel.wrap_min_params=3000"},
      // ... and units mixing frozen and trainable parameters (a gated block inside each FlamingoLayer).
      {"parallel.wrap_policy=custom", "parallel.wrap_patterns=[lang_encoder.model.layers.*, perceiver]"},
  };
  for (const auto& sets : policies) {
    const auto cfg = config(2, sets);
    const RunOutput two = run(sets[0].substr(sets[0].find('=') + 1), 2, cfg);
    expectSameRun(one, two, sets[0], 1e-5, kTensorRel);
    expectCleanGradientFlow(two, sets[0]);
    expectPlannedLayout(two, cfg, fsdp_plan::Strategy::kFullShard, 2, 1);
  }
}

TEST_F(FsdpTest, AccumulationCheckpointingAndAnUntiedHeadTrainAsOneProcess) {
  const RunOutput oneAccum = run("single_accum", 1, single({"optim.grad_accum_steps=2"}));
  ASSERT_EQ(oneAccum.losses.size(), 5u);
  expectSameRun(oneAccum, run("accum", 2, config(2, {"optim.grad_accum_steps=2"})), "accumulation", 1e-5,
                kTensorRel);
  // Recomputed units are gathered again inside backward and reduced from their input's gradient hook.
  const RunOutput oneCkpt = run("single_ckpt", 1, single({"model.gradient_checkpointing=true"}));
  expectSameRun(oneCkpt, run("ckpt", 2, config(2, {"model.gradient_checkpointing=true"})), "checkpointing",
                1e-5, kTensorRel);
  const RunOutput oneUntied = run("single_untied", 1, single({"model.lm.tied_head=false"}));
  expectSameRun(oneUntied, run("untied", 2, config(2, {"model.lm.tied_head=false"})), "untied head", 1e-5,
                kTensorRel);
}

TEST_F(FsdpTest, OnlyThePerceiverTheCrossAttentionAndTheNewRowsChange) {
  const auto cfg = config(2);
  const RunOutput r = run("trained", 2, cfg);
  ASSERT_FALSE(r.state.empty());
  step::seedForModelInit(cfg);
  model::Flamingo initial(model::FlamingoOptions::fromConfig(cfg.model));
  std::map<std::string, torch::Tensor> before;
  for (const auto& [name, t] : initial->namedParameters()) before[name] = t.detach();
  const auto rowMask = initial->embeddingGradientRowMask().squeeze(1).to(torch::kBool);
  const std::string embedding = "lang_encoder.model.embed_tokens.weight";
  int changed = 0;
  for (const auto& [name, t] : r.state) {
    if (!before.count(name)) continue;  // buffers
    const bool trains =
        name.rfind("perceiver.", 0) == 0 || name.find("gated_cross_attn") != std::string::npos;
    if (name == embedding) {
      EXPECT_TRUE(torch::equal(t.index({~rowMask}), before[name].index({~rowMask})))
          << "old rows of " << name;
      EXPECT_FALSE(torch::equal(t.index({rowMask}), before[name].index({rowMask}))) << "new rows of " << name;
    } else if (trains) {
      changed += torch::equal(t, before[name]) ? 0 : 1;
    } else {
      EXPECT_TRUE(torch::equal(t, before[name])) << name << " is frozen but changed";
    }
  }
  EXPECT_GT(changed, 10);
}

TEST_F(FsdpTest, ANanOnOneRankSkipsTheStepOnEveryRank) {
  Env env;
  env[1] = {{"FS_FAULT_NAN_LOSS", "1:3"}};
  const RunOutput r = run("nan", 2, config(2), env);
  int skipped = 0, steps = 0;
  for (const auto& e : r.events) {
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) {
      ++steps;
      if (!s->skipped) continue;
      ++skipped;
      EXPECT_NE(s->skip_reason.find("non-finite loss"), std::string::npos) << s->skip_reason;
    }
  }
  EXPECT_EQ(skipped, 1);
  EXPECT_EQ(steps, 10);
  for (const auto& [name, t] : r.state) EXPECT_TRUE(torch::isfinite(t).all().item<bool>()) << name;
}

TEST_F(FsdpTest, OneRankWritesTheSingleProcessCheckpointBitForBit) {
  // Without clipping nothing is summed in another order: the sharded run must be exact.
  const RunOutput one = run("single", 1, single({"optim.max_grad_norm=0"}));
  const RunOutput sharded = run("fsdp1", 1, config(1, {"optim.max_grad_norm=0"}));
  auto a = checkpoint::readCheckpoint(one.dir / "checkpoint_0.pt");
  auto b = checkpoint::readCheckpoint(sharded.dir / "checkpoint_0.pt");
  ASSERT_TRUE(a.isOk() && b.isOk());
  expectBitwiseEqual(*a, *b, "fsdp world 1 vs one process");
}

// NOTE [CPU offload]: with parallel.cpu_offload the shards, their gradients and AdamW's state live in host
// memory and every gather and reduction goes through a copy (host to host on the CPU): the run is bit for
// bit the one that keeps its shards in place (private too: offloaded shards are never node-shared), with
// clipping and two datasets a step; each rank's log says where the shards live.
TEST_F(FsdpTest, CpuOffloadTrainsBitForBitLikeShardsKeptInPlace) {
  const RunOutput kept = run("kept", 2, config(2, {"parallel.shared_shards=false"}));
  const RunOutput offloaded = run("offloaded", 2, config(2, {"parallel.cpu_offload=true"}));
  ASSERT_EQ(kept.losses.size(), 10u);
  ASSERT_EQ(offloaded.losses.size(), 10u) << offloaded.exits[0].output;
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(offloaded.losses[i], kept.losses[i]) << "step " << i + 1;
  auto a = checkpoint::readCheckpoint(kept.dir / "checkpoint_0.pt");
  auto b = checkpoint::readCheckpoint(offloaded.dir / "checkpoint_0.pt");
  ASSERT_TRUE(a.isOk() && b.isOk());
  expectBitwiseEqual(*a, *b, "cpu_offload vs shards kept in place");
  for (int r = 0; r < 2; ++r) {
    const std::string log = rankLog(offloaded, r);
    EXPECT_NE(log.find("FSDP shards on cpu (parallel.cpu_offload"), std::string::npos) << "rank " << r;
    EXPECT_NE(log.find("FSDP shards: private (parallel.cpu_offload"), std::string::npos) << "rank " << r;
    EXPECT_NE(rankLog(kept, r).find("FSDP shards on cpu with the model"), std::string::npos) << "rank " << r;
  }
}

TEST_F(FsdpTest, ResumesOnAnotherWorldSizeAndMode) {
  const std::vector<std::string> every5 = {"checkpoint.every_steps=5", "checkpoint.keep_last=5"};
  const RunOutput whole = run("whole", 2, config(2, every5));
  ASSERT_EQ(whole.losses.size(), 10u);
  ASSERT_TRUE(std::filesystem::exists(whole.dir / "checkpoint_step5.pt"));
  auto resumeWith = [&](const std::string& name, int world, const protocol::RunConfig& cfg) {
    std::filesystem::create_directories(root_ / name);
    std::filesystem::copy_file(whole.dir / "checkpoint_step5.pt", root_ / name / "checkpoint_step5.pt");
    const RunOutput r = run(name, world, cfg);
    ASSERT_EQ(r.losses.size(), 5u) << r.exits[0].output;
    for (size_t i = 0; i < 5; ++i) {
      for (const auto& [dataset, l] : whole.losses[5 + i]) {
        EXPECT_NEAR(r.losses[i].at(dataset), l, 1e-5 * std::abs(l))
            << name << " step " << 6 + i << " " << dataset;
      }
    }
  };
  resumeWith("fsdp3", 3, config(3, every5));
  auto one = single(every5);
  resumeWith("single", 1, one);
}

// A save at step 5 and a restart from it alone: the uninterrupted run's losses and final checkpoint, bit
// for bit, under `strategy` on `world` ranks over `nodes` nodes.
void FsdpTest::expectRestartIsBitwise(const std::string& strategy, int world, int nodes) {
  SCOPED_TRACE(strategy);
  const std::vector<std::string> sets = {"parallel.sharding_strategy=" + strategy, "checkpoint.every_steps=5",
                                         "checkpoint.keep_last=5"};
  const auto cfg = config(world, sets, nodes);
  const Env env = FsdpTest::nodes(world, world / nodes);
  const RunOutput whole = run(strategy + "_whole", world, cfg, env);
  ASSERT_EQ(whole.losses.size(), 10u);
  const auto restartDir = root_ / (strategy + "_restarted");
  std::filesystem::create_directories(restartDir);
  std::filesystem::copy_file(whole.dir / "checkpoint_step5.pt", restartDir / "checkpoint_step5.pt");
  const RunOutput restarted = run(strategy + "_restarted", world, cfg, env);
  ASSERT_EQ(restarted.losses.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(restarted.losses[i], whole.losses[5 + i]) << "step " << 6 + i;
  auto a = checkpoint::readCheckpoint(whole.dir / "checkpoint_0.pt");
  auto b = checkpoint::readCheckpoint(restarted.dir / "checkpoint_0.pt");
  ASSERT_TRUE(a.isOk() && b.isOk());
  expectBitwiseEqual(*a, *b, strategy + ": restarted vs uninterrupted");
}

TEST_F(FsdpTest, HybridSaveAndRestartIsBitwiseTheUninterruptedRun) {
  expectRestartIsBitwise("hybrid_shard", 4, 2);
}

// Issue 44 item 4: shard_grad_op (units kept gathered from forward to backward) saves and restarts like
// full_shard and no_shard.
TEST_F(FsdpTest, EveryStrategySavesAndRestartsBitwise) {
  for (const std::string strategy : {"full_shard", "shard_grad_op", "no_shard"})
    expectRestartIsBitwise(strategy, 2, 1);
}

constexpr const char* kShapesOnly = "(delayed init: shards from the node's first rank)";
constexpr const char* kNodeSource = "(delayed init: source for this node)";

// Delayed init (NOTE [Values from the node's first rank]) is the default: rank 1 builds shapes only and
// the run is the single process's (every other test here runs that way too); without it every rank builds
// the model and rank 0's weights are broadcast whole, with the same result.
TEST_F(FsdpTest, DelayedInitAndFullBuildsTrainAlike) {
  const RunOutput one = run("single", 1, single());
  const RunOutput delayed = run("delayed", 2, config(2));
  EXPECT_NE(rankLog(delayed, 1).find(kShapesOnly), std::string::npos);
  EXPECT_NE(rankLog(delayed, 0).find(kNodeSource), std::string::npos);
  expectSameRun(one, delayed, "delayed init", 1e-5, kTensorRel);
  const RunOutput whole = run("whole", 2, config(2, {"parallel.delayed_init=false"}));
  EXPECT_EQ(rankLog(whole, 1).find("delayed init"), std::string::npos);
  expectSameRun(one, whole, "every rank builds the model", 1e-5, kTensorRel);
  // 2 nodes x 2: each node's first rank builds the values for its node, the others shapes only; under
  // full_shard (shards spanning both nodes) and hybrid_shard (one node) alike.
  for (const char* strategy : {"full_shard", "hybrid_shard"}) {
    const RunOutput two =
        run(std::string("nodes_delayed_") + strategy, 4,
            config(4, {std::string("parallel.sharding_strategy=") + strategy}, 2), nodes(4, 2));
    for (int r = 0; r < 4; ++r) {
      EXPECT_NE(rankLog(two, r).find(r % 2 == 0 ? kNodeSource : kShapesOnly), std::string::npos)
          << strategy << " rank " << r;
    }
    expectSameRun(one, two, std::string("delayed init, ") + strategy + " on 2 nodes x 2", 1e-5, kTensorRel);
  }
}

// Each unit's dtype in the layout event: frozen units are stored as `frozen`, trainable ones as `trainable`.
void expectUnitDtypes(const RunOutput& r, const std::string& frozen, const std::string& trainable,
                      const std::string& what) {
  const auto* layout = layoutOf(r);
  ASSERT_NE(layout, nullptr) << what;
  for (const auto& u : layout->units) {
    EXPECT_EQ(u.dtype, u.trainable ? trainable : frozen) << what << ": unit '" << u.path << "'";
  }
}

// A mixed-precision run against one process: losses within `rel`, the trainable state within `rel` as a
// whole (L2). Per tensor: NOTE [Tensor tolerance] in rank_runs.h, with bfloat16's rounding instead of
// summation order: an element whose gradient is nearly zero may take AdamW steps of about lr in the other
// direction, so each tensor may differ by 2 x lr per step beyond `rel` of its largest value.
void expectCloseRun(const RunOutput& a, const RunOutput& b, double rel, const std::string& what) {
  constexpr double kLr = 1e-4;  // optim.lr's default
  const double drift = 2 * kLr * static_cast<double>(a.losses.size());
  ASSERT_EQ(a.losses.size(), b.losses.size()) << what;
  for (size_t i = 0; i < a.losses.size(); ++i) {
    for (const auto& [name, l] : a.losses[i]) {
      ASSERT_TRUE(b.losses[i].count(name)) << what << " step " << i + 1 << " " << name;
      EXPECT_NEAR(b.losses[i].at(name), l, rel * std::abs(l)) << what << " step " << i + 1 << " " << name;
    }
  }
  ASSERT_EQ(a.state.size(), b.state.size()) << what;
  double diff2 = 0, norm2 = 0;
  for (const auto& [name, t] : a.state) {
    ASSERT_TRUE(b.state.count(name)) << what << " " << name;
    const torch::Tensor x = t.to(torch::kFloat64), y = b.state.at(name).to(torch::kFloat64);
    EXPECT_LE((x - y).abs().max().item<double>(), rel * x.abs().max().item<double>() + drift)
        << what << " " << name;
    diff2 += (x - y).pow(2).sum().item<double>();
    norm2 += x.pow(2).sum().item<double>();
  }
  EXPECT_LE(std::sqrt(diff2), rel * std::sqrt(norm2)) << what << ": all tensors together";
}

// Mixed precision (NOTE [Mixed precision in a flat parameter]): under amp_bf16 the defaults gather and
// reduce in bfloat16 and store frozen parameters in it; trainable shards, their gradients and AdamW stay
// float32 (model state to the byte as planned), and the run stays close to one process under autocast.
// With param_dtype fp32 (the reference's setting) only the reductions are bfloat16.
TEST_F(FsdpTest, MixedPrecisionGathersAndReducesInBfloat16) {
  const RunOutput one = run("single_amp", 1, single({"optim.precision=amp_bf16"}));
  ASSERT_EQ(one.losses.size(), 10u);
  // bfloat16 keeps 8 bits of mantissa: weights, per-rank gradients and their sum are rounded where one
  // process rounds only inside autocast's matmuls.
  constexpr double kRel = 2e-2;
  const auto cfg = config(2, {"optim.precision=amp_bf16"});
  const RunOutput bf16 = run("amp_bf16", 2, cfg);
  expectUnitDtypes(bf16, "bfloat16", "float32", "param_dtype auto");
  expectPlannedLayout(bf16, cfg, fsdp_plan::Strategy::kFullShard, 2, 1);
  expectCloseRun(one, bf16, kRel, "amp_bf16, units gathered in bfloat16");
  for (const auto& [name, t] : bf16.state) EXPECT_EQ(t.scalar_type(), torch::kFloat) << name;

  const auto cfgRef = config(2, {"optim.precision=amp_bf16", "parallel.mixed_precision.param_dtype=fp32"});
  const RunOutput ref = run("amp_bf16_fp32_params", 2, cfgRef);
  expectUnitDtypes(ref, "float32", "float32", "param_dtype fp32");
  expectPlannedLayout(ref, cfgRef, fsdp_plan::Strategy::kFullShard, 2, 1);
  expectCloseRun(one, ref, kRel, "amp_bf16, units gathered in float32");
  // Frozen storage at half the bytes: the one place the two settings differ in model state.
  // The same units gathered at the peak, every one of them cast: exactly half the bytes.
  const auto lastMemory = [](const RunOutput& r) {
    protocol::RankMemory last;
    for (const auto& e : r.events) {
      if (const auto* m = std::get_if<protocol::MemoryEvent>(&e.body)) last = m->ranks.at(0);
    }
    return last;
  };
  const auto low = lastMemory(bf16), high = lastMemory(ref);
  EXPECT_LT(low.params, high.params);
  EXPECT_GT(low.gathered, 0);
  EXPECT_EQ(2 * low.gathered, high.gathered);
}

// Plain bf16 (NOTE [Mixed precision in a flat parameter]): the trainable shards, their gradients and
// AdamW's state are bfloat16 as well, which is what the planner counts (model state to the byte);
// checkpoints stay float32 and hold values bfloat16 can represent. It trains like amp_bf16 within
// bfloat16's rounding of the weights.
TEST_F(FsdpTest, PlainBf16TrainsBfloat16Weights) {
  const RunOutput amp = run("single_amp_ref", 1, single({"optim.precision=amp_bf16"}));
  const auto cfg = config(2, {"optim.precision=bf16"});
  const RunOutput bf16 = run("bf16", 2, cfg);
  ASSERT_EQ(bf16.losses.size(), 10u);
  expectUnitDtypes(bf16, "bfloat16", "bfloat16", "bf16");
  expectPlannedLayout(bf16, cfg, fsdp_plan::Strategy::kFullShard, 2, 1);
  ASSERT_FALSE(bf16.state.empty());
  for (const auto& [name, t] : bf16.state) {
    EXPECT_EQ(t.scalar_type(), torch::kFloat) << name;
    EXPECT_TRUE(torch::equal(t, t.to(torch::kBFloat16).to(torch::kFloat)))
        << name << " is not bfloat16-valued";
  }
  for (size_t i = 0; i < amp.losses.size(); ++i) {
    for (const auto& [name, l] : amp.losses[i]) {
      ASSERT_TRUE(bf16.losses[i].count(name)) << "step " << i + 1 << " " << name;
      EXPECT_NEAR(bf16.losses[i].at(name), l, 5e-2 * std::abs(l)) << "step " << i + 1 << " " << name;
    }
  }
}

}  // namespace
}  // namespace fs::trainer
