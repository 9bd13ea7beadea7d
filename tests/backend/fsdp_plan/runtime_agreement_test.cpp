// The planner against the runtime: the tiny model sharded by
// fsdp::ShardedModel over 1-3 Gloo thread ranks, with the units of the
// planner's layouts, holds exactly the shard bytes, padding and trainable
// elements the planner computes for each unit (fp32, where stored and
// gathered dtypes agree). Issue 8: "measured sharded-parameter and
// optimizer bytes per rank equal the planner's exactly".
//
// size_based nests units (the vision tower around its blocks): both give a
// nested unit its module's parameters minus those of the units inside it,
// as torch's FSDP does. The runtime splits trainable parameters by
// weight-decay group as the engine does (parallelizeFlamingo).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <mutex>

#include "backend/fsdp/sharded_model.h"
#include "backend/fsdp_plan/layout.h"
#include "backend/fsdp_plan/sharding.h"
#include "backend/model/flamingo.h"
#include "backend/step/optimizer.h"
#include "plan_test_util.h"
#include "tests/backend/distributed/thread_ranks.h"

namespace fs::fsdp_plan {
namespace {

std::mutex& buildMutex() {
  static std::mutex mu;
  return mu;
}

struct Case {
  std::vector<std::string> sets;
  Strategy strategy;
  fsdp::Strategy runtime;
  int world;
  int nodes;
};

void expectAgreement(const Case& c) {
  const auto config = test::preset("tiny", c.sets);
  auto inv = buildParamInventory(config.model);
  ASSERT_TRUE(inv.isOk());
  const auto precision = *oursPrecision(config);
  auto layout = buildLayout(*inv, *wrapPolicyFromConfig(config.parallel), precision);
  ASSERT_TRUE(layout.isOk()) << layout.status().message();
  const auto plan = planShards(*layout, precision, c.strategy, {c.world, c.nodes});

  const auto errors = fs::testing::runThreadRanks(c.world, [&](distributed::Communicator& world) {
    model::Flamingo m{nullptr};
    {
      std::lock_guard<std::mutex> lock(buildMutex());
      torch::manual_seed(0);
      m = model::Flamingo(model::FlamingoOptions::fromConfig(config.model));
    }
    m->freezeAsOpenFlamingo();
    std::map<std::string, std::shared_ptr<torch::nn::Module>> modules;
    for (const auto& item : m->named_modules()) modules[item.key()] = item.value();
    std::vector<fsdp::UnitSpec> specs;
    for (const auto& u : layout->units) {
      if (!u.path.empty()) specs.push_back({u.path, modules.at(u.path)});
    }
    fsdp::ShardingOptions options;
    options.trainableGroup = [](const std::string& name) { return step::decaysWeight(name) ? 0 : 1; };
    options.strategy = c.runtime;
    options.ranksPerNode = c.world / c.nodes;
    auto comm = std::shared_ptr<distributed::Communicator>(&world, [](distributed::Communicator*) {});
    fsdp::ShardedModel sharded(*m, specs, comm, options);

    // Runtime units: ours in spec order, the root last; the planner's: the root first.
    for (size_t i = 0; i < layout->units.size(); ++i) {
      const auto& u = layout->units[i];
      const auto& ru = u.path.empty() ? sharded.units().back() : sharded.units().at(i - 1);
      int64_t bytes = 0, padding = 0, trainable = 0;
      for (const auto& f : ru.flats) {
        bytes += f->shardNumel() * 4;
        padding += f->padding();
        trainable += f->trainable() ? f->shardNumel() : 0;
      }
      int64_t plannedTrainable = 0;
      for (const auto& g : plan.units[i].groups) plannedTrainable += g.trainable ? g.shardNumel : 0;
      EXPECT_EQ(ru.flats.size(), plan.units[i].groups.size()) << u.path;
      EXPECT_EQ(bytes, plan.units[i].shardBytes()) << u.path;
      EXPECT_EQ(padding, plan.units[i].padding()) << u.path;
      EXPECT_EQ(trainable, plannedTrainable) << u.path;
    }
    // hybrid_shard / no_shard split the world: no rank may tear its sub-groups down (end of scope) while
    // another is still joining them, and nothing above ran a collective on them.
    world.barrier("units checked");
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

TEST(RuntimeAgreement, EveryPolicyAndStrategyHoldsThePlannedShards) {
  const std::vector<std::vector<std::string>> policies = {
      {"parallel.wrap_policy=openflamingo"},
      {"parallel.wrap_policy=transformer_layer"},
      {"parallel.wrap_policy=size_based", "parallel.wrap_min_params=3000"},
      // One unit over the LM: its embedding (not decayed) and the gated blocks (decayed), two trainable
      // groups.
      {"parallel.wrap_policy=custom", "parallel.wrap_patterns=[lang_encoder, vision_encoder]"},
      {"parallel.wrap_policy=custom",
       "parallel.wrap_patterns=[lang_encoder.model.decoder.layers.*, perceiver]"},
  };
  for (const auto& sets : policies) {
    for (int world = 1; world <= 3; ++world) {
      SCOPED_TRACE(sets[0] + " world " + std::to_string(world));
      expectAgreement({sets, Strategy::kFullShard, fsdp::Strategy::kFullShard, world, 1});
    }
    SCOPED_TRACE(sets[0] + " hybrid / no_shard");
    expectAgreement({sets, Strategy::kHybridShard, fsdp::Strategy::kHybridShard, 4, 2});
    expectAgreement({sets, Strategy::kNoShard, fsdp::Strategy::kNoShard, 2, 1});
  }
}

}  // namespace
}  // namespace fs::fsdp_plan
