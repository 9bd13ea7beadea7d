// The tiny Flamingo sharded unit by unit (vision tower, Perceiver, every
// gated block, every decoder layer; the rest in the root unit) on 1-3 Gloo
// ranks as threads, each rank on its rows of the batch, backwards to the
// gradients of the unsharded model on the whole batch: with and without
// gradient checkpointing, for every LM family. Units are freed between
// uses (nothing but the root stays gathered after forward).
#include "backend/fsdp/sharded_model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <map>
#include <mutex>

#include "tests/backend/distributed/thread_ranks.h"
#include "tests/backend/fsdp/sharded_flamingo.h"

namespace fs::fsdp {
namespace {

using model::Flamingo;
namespace mt = model::testing;
using namespace fs::fsdp::testing;

// Shards the model over `world` thread ranks, each on its rows of `batch`,
// and checks the gradients against the unsharded model on the whole batch
// and what stays gathered after forward and after backward. `early`: units
// are reduce-scattered during backward (the gated blocks must be, before
// finishBackward).
void expectUnshardedGradients(const std::string& family, bool checkpointing, const mt::Batch& batch,
                              int world, ShardingOptions options, bool early = false) {
  const int64_t B = batch.input_ids.size(0);
  const double targets = batch.attention_mask.slice(1, 1).sum().item<double>();
  std::map<std::string, torch::Tensor> want;
  {
    Flamingo m = buildModel(family, checkpointing);
    lossOf(m, batch, 0, B, targets).backward();
    for (const auto& p : m->named_parameters()) {
      if (p.value().requires_grad() && p.value().grad().defined()) want[p.key()] = p.value().grad().clone();
    }
  }
  ASSERT_FALSE(want.empty());
  std::mutex mu;
  const auto errors = fs::testing::runThreadRanks(world, [&](distributed::Communicator& comm) {
    Flamingo m = buildModel(family, checkpointing);
    // Checkpointing's recompute restores torch's global generator, which the other rank threads may still be
    // drawing their weights from: everyone builds first.
    comm.barrier("models built");
    auto sharded = std::make_shared<ShardedModel>(
        *m, flamingoUnits(m), std::shared_ptr<distributed::Communicator>(&comm, [](auto*) {}), options);
    m->setUnitHooks(sharded);
    sharded->setReduceDuringBackward(early);
    const int64_t rows = B / world;
    sharded->beginForward();
    torch::Tensor loss = lossOf(m, batch, comm.rank() * rows, rows, targets);
    int64_t rootBytes = 0, allBytes = 0;
    for (const auto& u : sharded->units()) {
      for (const auto& f : u.flats) {
        allBytes += f->paddedNumel() * 4;
        if (&u == &sharded->units().back()) rootBytes += f->gatheredBytes();
      }
    }
    const int64_t afterForward = sharded->gatheredBytes();
    sharded->beginBackward();
    loss.backward();
    // Gated blocks whose reduction began (their shard has its gradient, or it is in flight: NOTE [Node-shared
    // shards]) and whose members no longer hold full-size gradients.
    int reducedEarly = 0;
    for (const auto& u : sharded->units()) {
      if (u.path.find("gated_cross_attn") == std::string::npos) continue;
      for (const auto& f : u.flats) {
        if (f->trainable() && (f->shard().grad().defined() || f->reducing()) &&
            !f->members().front().param.grad().defined()) {
          ++reducedEarly;
        }
      }
    }
    sharded->finishBackward();
    const int64_t afterBackward = sharded->gatheredBytes();
    // Every trainable member's gradient: the shard gradients all-gathered
    // (every replica holds the same shards, so gather over the whole group
    // only when it is the shard group).
    std::map<std::string, torch::Tensor> got;
    for (const auto& u : sharded->units()) {
      for (const auto& f : u.flats) {
        if (!f->trainable()) continue;
        const int64_t shardRanks = f->paddedNumel() / f->shardNumel();
        torch::Tensor all = torch::zeros({f->shardNumel() * comm.size()});
        comm.allGather(all, f->shard().grad(), "test gather grads");
        // Rank r holds shard r % shardRanks (shard groups are consecutive ranks).
        torch::Tensor full = all.narrow(0, 0, f->shardNumel() * shardRanks);
        for (size_t k = 0; k < f->members().size(); ++k) {
          const auto& member = f->members()[k];
          got[member.name] = full.narrow(0, f->offsetOf(k), member.param.numel()).view(member.param.sizes());
        }
      }
    }
    m->setUnitHooks(nullptr);
    std::lock_guard<std::mutex> lock(mu);
    if (early) {
      EXPECT_GT(reducedEarly, 0) << "no gated block was reduced during backward";
    } else {
      EXPECT_EQ(reducedEarly, 0);
    }
    switch (options.strategy) {
      case Strategy::kFullShard:
      case Strategy::kHybridShard:
        EXPECT_EQ(afterForward, rootBytes) << "only the root stays gathered after forward";
        EXPECT_EQ(afterBackward, 0);
        break;
      case Strategy::kNoShard:  // a solo shard group: the members view the shard, nothing is gathered
        EXPECT_EQ(afterForward, 0);
        EXPECT_EQ(afterBackward, 0);
        break;
      case Strategy::kShardGradOp:
        // Units whose forward built a graph stay gathered for backward; the vision tower (no graph) and
        // checkpointed units (gathered again by their recompute) do not.
        EXPECT_EQ(afterForward, checkpointing
                                    ? rootBytes
                                    : allBytes - sharded->units().front().flats.front()->paddedNumel() * 4);
        EXPECT_EQ(afterBackward, 0);
        break;
    }
    for (const auto& [name, g] : want) {
      ASSERT_TRUE(got.count(name)) << name;
      EXPECT_TRUE(torch::allclose(got[name], g, 1e-4, 1e-6))
          << "world " << world << " rank " << comm.rank() << " " << name << ": max diff "
          << (got[name] - g).abs().max().item<double>();
    }
    for (const auto& [name, g] : got) {
      if (!want.count(name)) {
        EXPECT_EQ(g.abs().max().item<double>(), 0.0) << name << " has no reference gradient";
      }
    }
  });
  for (const auto& e : errors) ASSERT_EQ(e, "") << "world " << world;
}

class ShardedModelTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(ShardedModelTest, BackwardsToTheUnshardedGradients) {
  const auto [family, checkpointing] = GetParam();
  const mt::Batch batch = [&] {
    std::lock_guard<std::mutex> lock(rngMutex());
    return mt::tinyBatch(mt::tinyOptions(family));
  }();
  for (int world : {1, 2}) expectUnshardedGradients(family, checkpointing, batch, world, {});
  expectUnshardedGradients(family, checkpointing, batch, 2, {}, /*early=*/true);
}

class StrategyTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

// Four ranks as two "nodes" of two for hybrid_shard.
TEST_P(StrategyTest, EveryStrategyBackwardsToTheUnshardedGradients) {
  const auto [strategy, checkpointing] = GetParam();
  const mt::Batch batch = [&] {
    std::lock_guard<std::mutex> lock(rngMutex());
    const auto o = mt::tinyOptions("opt");
    return concatBatches(mt::tinyBatch(o, 1), mt::tinyBatch(o, 2));
  }();
  expectUnshardedGradients("opt", checkpointing, batch, 4, ShardingOptions{parseStrategy(strategy), 2});
}

INSTANTIATE_TEST_SUITE_P(Strategies, StrategyTest,
                         ::testing::Combine(::testing::Values("full_shard", "shard_grad_op", "hybrid_shard",
                                                              "no_shard"),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + (std::get<1>(info.param) ? "_checkpointed" : "");
                         });

// NOTE [Prefetch and the gather limit]: the second pass prefetches from the
// first one's order. Two thread ranks, full_shard; the gradients of the
// second pass must still be the unsharded model's, and the most units
// gathered at once is exactly 2 when a prefetch may happen (the limit lets
// two units be held) and exactly 1 when none may: the hook ordering frees
// a unit before the one whose backward comes next is gathered.
// The opt family's tiny batch, drawn under the generator lock (other rank threads may be drawing weights).
mt::Batch optBatch() {
  std::lock_guard<std::mutex> lock(rngMutex());
  return mt::tinyBatch(mt::tinyOptions("opt"));
}

// One training pass of a rank over its rows, the peaks counted from its start.
void trainPass(ShardedModel& sharded, Flamingo& m, const mt::Batch& batch, int64_t row0, int64_t rows,
               double targets) {
  sharded.resetPeak();
  sharded.beginForward();
  torch::Tensor loss = lossOf(m, batch, row0, rows, targets);
  sharded.beginBackward();
  loss.backward();
  sharded.finishBackward();
}

struct PrefetchCase {
  int limit;
  bool forward;
  ShardingOptions::BackwardPrefetch backward;
  bool checkpointing;
};

class PrefetchTest : public ::testing::TestWithParam<PrefetchCase> {};

TEST_P(PrefetchTest, GathersAheadWithinTheLimit) {
  const PrefetchCase c = GetParam();
  const mt::Batch batch = optBatch();
  const int64_t B = batch.input_ids.size(0);
  const double targets = batch.attention_mask.slice(1, 1).sum().item<double>();
  std::map<std::string, torch::Tensor> want;
  {
    Flamingo m = buildModel("opt", c.checkpointing);
    lossOf(m, batch, 0, B, targets).backward();
    for (const auto& p : m->named_parameters()) {
      if (p.value().requires_grad() && p.value().grad().defined()) want[p.key()] = p.value().grad().clone();
    }
  }
  ShardingOptions options;
  options.forwardPrefetch = c.forward;
  options.backwardPrefetch = c.backward;
  options.limitAllGathers = c.limit;
  options.sharedShards = false;  // node-shared shards never prefetch (NOTE [Node-shared shards])
  const bool mayPrefetch =
      (c.forward || c.backward != ShardingOptions::BackwardPrefetch::kNone) && c.limit != 1;
  std::mutex mu;
  const auto errors = fs::testing::runThreadRanks(2, [&](distributed::Communicator& comm) {
    Flamingo m = buildModel("opt", c.checkpointing);
    comm.barrier("models built");
    auto sharded = std::make_shared<ShardedModel>(
        *m, flamingoUnits(m), std::shared_ptr<distributed::Communicator>(&comm, [](auto*) {}), options);
    m->setUnitHooks(sharded);
    sharded->setReduceDuringBackward(true);
    int firstPeak = 0;
    std::vector<size_t> firstSet;
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto& u : sharded->units()) {
        for (const auto& f : u.flats) f->shard().mutable_grad() = torch::Tensor();
      }
      trainPass(*sharded, m, batch, comm.rank() * (B / 2), B / 2, targets);
      if (pass == 0) {
        firstPeak = sharded->peakUnitsGathered();
        firstSet = sharded->unitsAtPeak();
      }
    }
    const int peak = sharded->peakUnitsGathered();
    const std::vector<size_t> atPeak = sharded->unitsAtPeak();
    std::map<std::string, torch::Tensor> got;
    for (const auto& u : sharded->units()) {
      for (const auto& f : u.flats) {
        if (!f->trainable()) continue;
        torch::Tensor full = torch::zeros({f->paddedNumel()});
        comm.allGather(full, f->shard().grad(), "test gather grads");
        for (size_t k = 0; k < f->members().size(); ++k) {
          const auto& member = f->members()[k];
          got[member.name] = full.narrow(0, f->offsetOf(k), member.param.numel()).view(member.param.sizes());
        }
      }
    }
    m->setUnitHooks(nullptr);
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(firstPeak, 1) << "the first pass has no order to prefetch from";
    EXPECT_EQ(peak, mayPrefetch ? 2 : 1) << "units gathered at once, limit " << c.limit;
    EXPECT_EQ(firstSet, std::vector<size_t>{0}) << "the first unit the forward gathers: the vision tower";
    EXPECT_EQ(atPeak.size(), static_cast<size_t>(peak)) << "the units gathered together at the peak";
    EXPECT_EQ(sharded->gatheredBytes(), 0);
    for (const auto& [name, g] : want) {
      ASSERT_TRUE(got.count(name)) << name;
      EXPECT_TRUE(torch::allclose(got[name], g, 1e-4, 1e-6))
          << name << ": max diff " << (got[name] - g).abs().max().item<double>();
    }
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
}

std::vector<PrefetchCase> prefetchCases() {
  using BP = ShardingOptions::BackwardPrefetch;
  return {{0, false, BP::kNone, false}, {0, true, BP::kNone, false}, {2, false, BP::kPre, false},
          {2, false, BP::kPost, false}, {2, true, BP::kPre, true},   {1, true, BP::kPre, false},
          {1, true, BP::kPost, true},   {0, true, BP::kPre, true}};
}

std::string prefetchCaseName(const ::testing::TestParamInfo<PrefetchCase>& info) {
  const PrefetchCase& c = info.param;
  static const char* const kBackward[] = {"none", "pre", "post"};
  return "limit" + std::to_string(c.limit) + (c.forward ? "_forward" : "") + "_backward_" +
         kBackward[static_cast<int>(c.backward)] + (c.checkpointing ? "_checkpointed" : "");
}

INSTANTIATE_TEST_SUITE_P(Windows, PrefetchTest, ::testing::ValuesIn(prefetchCases()), prefetchCaseName);

// unitsAtPeak(): the units gathered together the first time the peak is
// reached, for a schedule known in advance. The tiny model with four decoder
// layers, units the decoder layers alone (the rest, gated blocks included,
// stays in the root), limit 2, second pass: a forward prefetch first holds
// layers 0 and 1 together; a backward prefetch (pre) first holds layers 3
// and 2, the backward's first two.
struct WindowCase {
  bool forward;  // else backward prefetch, pre
  size_t first;  // the lower decoder layer of the pair expected at the peak
};

Flamingo buildFourLayers() {
  std::lock_guard<std::mutex> lock(rngMutex());
  auto config = mt::tinyConfig("opt");
  config.lm.layers = 4;
  auto options = model::FlamingoOptions::fromConfig(config);
  options.lm().noDropout();
  torch::manual_seed(3);
  Flamingo m(options);
  m->freezeAsOpenFlamingo();
  mt::setGates(m);
  return m;
}

class GatherWindowTest : public ::testing::TestWithParam<WindowCase> {};

TEST_P(GatherWindowTest, RecordsTheUnitsGatheredTogetherAtThePeak) {
  const WindowCase c = GetParam();
  const mt::Batch batch = optBatch();
  const int64_t B = batch.input_ids.size(0);
  const double targets = batch.attention_mask.slice(1, 1).sum().item<double>();
  ShardingOptions options;
  options.limitAllGathers = 2;
  options.forwardPrefetch = c.forward;
  using BP = ShardingOptions::BackwardPrefetch;
  options.backwardPrefetch = c.forward ? BP::kNone : BP::kPre;
  options.sharedShards = false;  // node-shared shards never prefetch (NOTE [Node-shared shards])
  std::mutex mu;
  const auto errors = fs::testing::runThreadRanks(2, [&](distributed::Communicator& comm) {
    Flamingo m = buildFourLayers();
    comm.barrier("models built");
    std::vector<UnitSpec> units;
    for (size_t i = 0; i < m->flamingoLayers().size(); ++i) {
      units.push_back({"layers." + std::to_string(i), m->flamingoLayers()[i]->decoder_layer});
    }
    auto sharded = std::make_shared<ShardedModel>(
        *m, units, std::shared_ptr<distributed::Communicator>(&comm, [](auto*) {}), options);
    m->setUnitHooks(sharded);
    std::vector<std::vector<size_t>> sets;
    for (int pass = 0; pass < 2; ++pass) {
      trainPass(*sharded, m, batch, comm.rank() * (B / 2), B / 2, targets);
      EXPECT_EQ(sharded->unitsAtPeak().size(), static_cast<size_t>(sharded->peakUnitsGathered()));
      sets.push_back(sharded->unitsAtPeak());
    }
    sharded->resetPeak();
    const auto afterReset = sharded->unitsAtPeak();
    m->setUnitHooks(nullptr);
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(sets[0], std::vector<size_t>{0}) << "no prefetch in the first pass: the first layer alone";
    EXPECT_EQ(sets[1], (std::vector<size_t>{c.first, c.first + 1}));
    EXPECT_TRUE(afterReset.empty()) << "between steps nothing but the root is gathered";
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
}

INSTANTIATE_TEST_SUITE_P(Schedules, GatherWindowTest,
                         ::testing::Values(WindowCase{true, 0}, WindowCase{false, 2}),
                         [](const auto& info) { return info.param.forward ? "forward" : "backward_pre"; });

// NOTE [Values from the node's first rank]: 4 ranks as 2 nodes x 2. Only ranks 0 and 2 hold values (the
// others hold NaN, which would show); every rank's shards are the model's own, under full_shard (the shard
// group spans both nodes) and hybrid_shard (one node).
TEST(DelayedInit, EveryShardComesFromItsNodesFirstRank) {
  const Flamingo reference = buildModel("opt", false);
  std::map<std::string, torch::Tensor> want;
  for (const auto& p : reference->named_parameters()) want[p.key()] = p.value().detach();
  for (Strategy strategy : {Strategy::kFullShard, Strategy::kHybridShard}) {
    ShardingOptions options;
    options.strategy = strategy;
    options.ranksPerNode = 2;
    options.valuesFromNodeLeader = true;
    std::mutex mu;
    const auto errors = fs::testing::runThreadRanks(4, [&](distributed::Communicator& comm) {
      Flamingo m = buildModel("opt", false);
      if (comm.rank() % 2 != 0) {
        torch::NoGradGuard noGrad;
        for (auto& p : m->parameters()) p.fill_(std::numeric_limits<float>::quiet_NaN());
      }
      ShardedModel sharded(*m, flamingoUnits(m),
                           std::shared_ptr<distributed::Communicator>(&comm, [](auto*) {}), options);
      for (const auto& u : sharded.units()) {
        for (const auto& f : u.flats) {
          torch::Tensor full = torch::empty({f->paddedNumel()}, f->shard().options().requires_grad(false));
          sharded.shardGroup().allGather(full, f->shard().detach(), "test gather values");
          std::lock_guard<std::mutex> lock(mu);
          for (size_t k = 0; k < f->members().size(); ++k) {
            const auto& member = f->members()[k];
            const auto got = full.narrow(0, f->offsetOf(k), member.param.numel()).view(member.param.sizes());
            EXPECT_TRUE(torch::equal(got, want.at(member.name))) << member.name << " on rank " << comm.rank();
          }
        }
      }
    });
    for (const auto& e : errors) ASSERT_EQ(e, "") << "strategy " << static_cast<int>(strategy);
  }
}

// Node 1's first rank built other values for one parameter: every rank stops, naming the flat parameter
// and the two ranks, instead of training a model stitched from two.
TEST(DelayedInit, NodesWithDifferentValuesAreRefusedByName) {
  const auto errors = fs::testing::runThreadRanks(4, [&](distributed::Communicator& comm) {
    Flamingo m = buildModel("opt", false);
    if (comm.rank() == 2) {
      torch::NoGradGuard noGrad;
      m->perceiver()->named_parameters().begin()->value().add_(1.0);
    }
    ShardingOptions options;
    options.ranksPerNode = 2;
    options.valuesFromNodeLeader = true;
    ShardedModel sharded(*m, flamingoUnits(m),
                         std::shared_ptr<distributed::Communicator>(&comm, [](auto*) {}), options);
  });
  for (size_t r = 0; r < errors.size(); ++r) {
    EXPECT_NE(
        errors[r].find("ranks 0 and 2 (the first ranks of nodes 0 and 1) built different initial values "
                       "for perceiver ("),
        std::string::npos)
        << "rank " << r << ": " << errors[r];
    EXPECT_NE(errors[r].find("parallel.delayed_init=false"), std::string::npos) << errors[r];
  }
}

TEST(ShardingStrategy, UnknownNameIsRefusedByName) {
  try {
    parseStrategy("fully_sharded");
    FAIL() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("parallel.sharding_strategy: unknown strategy 'fully_sharded'"),
              std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, ShardedModelTest,
                         ::testing::Combine(::testing::Values("opt", "mpt", "gpt_neox", "llama"),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + (std::get<1>(info.param) ? "_checkpointed" : "");
                         });

}  // namespace
}  // namespace fs::fsdp
