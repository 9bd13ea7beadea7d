// Clipping sharded gradients of the tiny Flamingo on 1-4 Gloo thread ranks
// (every sharding strategy) against step::clipGradNorm on the unsharded
// gradients: the global norm and clipped gradients, and the reference's
// per-unit clipping (each unit's trainable gradients by their own norm).
#include "backend/fsdp/sharded_clip.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>

#include "tests/backend/distributed/thread_ranks.h"
#include "tests/backend/fsdp/sharded_flamingo.h"

namespace fs::fsdp {
namespace {

using model::Flamingo;
namespace mt = model::testing;
using namespace fs::fsdp::testing;

struct Case {
  std::string strategy;
  int world;
  ClipScope scope;
  double maxNorm;
};

void expectClippedAsUnsharded(const Case& c) {
  const mt::Batch batch = [&] {
    std::lock_guard<std::mutex> lock(rngMutex());
    const auto o = mt::tinyOptions("opt");
    return concatBatches(mt::tinyBatch(o, 1), mt::tinyBatch(o, 2));
  }();
  const double targets = batch.attention_mask.slice(1, 1).sum().item<double>();
  // Reference: unsharded gradients, clipped globally or unit by unit.
  std::map<std::string, torch::Tensor> want;
  double wantNorm = 0;
  {
    Flamingo m = buildModel("opt", false);
    lossOf(m, batch, 0, 4, targets).backward();
    std::vector<torch::Tensor> all;
    for (const auto& p : m->parameters()) {
      if (p.requires_grad()) all.push_back(p);
    }
    wantNorm = step::globalGradNorm(all);
    if (c.scope == ClipScope::kGlobal) {
      step::clipGradNorm(all, {c.maxNorm});
    } else {
      std::set<const c10::TensorImpl*> inUnits;
      for (const auto& u : flamingoUnits(m)) {
        std::vector<torch::Tensor> mine;
        for (const auto& p : u.module->parameters()) {
          inUnits.insert(p.unsafeGetTensorImpl());
          if (p.requires_grad()) mine.push_back(p);
        }
        if (!mine.empty()) step::clipGradNorm(mine, {c.maxNorm});
      }
      std::vector<torch::Tensor> root;  // the rest: one unit
      for (const auto& p : m->parameters()) {
        if (p.requires_grad() && !inUnits.count(p.unsafeGetTensorImpl())) root.push_back(p);
      }
      step::clipGradNorm(root, {c.maxNorm});
    }
    for (const auto& p : m->named_parameters()) {
      if (p.value().requires_grad() && p.value().grad().defined()) want[p.key()] = p.value().grad().clone();
    }
  }
  std::mutex mu;
  const auto errors = fs::testing::runThreadRanks(c.world, [&](distributed::Communicator& comm) {
    Flamingo m = buildModel("opt", false);
    comm.barrier("models built");
    ShardedModel sharded(*m, flamingoUnits(m),
                         std::shared_ptr<distributed::Communicator>(&comm, [](auto*) {}),
                         ShardingOptions{parseStrategy(c.strategy), 2});
    auto hooks = std::shared_ptr<ShardedModel>(&sharded, [](auto*) {});
    m->setUnitHooks(hooks);
    const int64_t rows = 4 / c.world;
    sharded.beginForward();
    torch::Tensor loss = lossOf(m, batch, comm.rank() * rows, rows, targets);
    sharded.beginBackward();
    loss.backward();
    sharded.finishBackward();
    const ShardedClipResult r = clipShardedGradNorm(sharded, {c.maxNorm}, c.scope);
    std::map<std::string, torch::Tensor> got;
    for (const auto& u : sharded.units()) {
      for (const auto& f : u.flats) {
        if (!f->trainable()) continue;
        torch::Tensor all = torch::zeros({f->shardNumel() * comm.size()});
        comm.allGather(all, f->shard().grad(), "test gather grads");
        for (size_t k = 0; k < f->members().size(); ++k) {
          const auto& member = f->members()[k];
          got[member.name] = all.narrow(0, f->offsetOf(k), member.param.numel()).view(member.param.sizes());
        }
      }
    }
    m->setUnitHooks(nullptr);
    std::lock_guard<std::mutex> lock(mu);
    const std::string what =
        c.strategy + " world " + std::to_string(c.world) + " rank " + std::to_string(comm.rank());
    EXPECT_NEAR(r.total.norm, wantNorm, 1e-5 * wantNorm) << what;
    EXPECT_TRUE(r.total.finite) << what;
    if (c.scope == ClipScope::kGlobal) {
      EXPECT_TRUE(r.total.clipped) << what << ": the case should clip";
    } else {
      EXPECT_GE(r.units.size(), 2u) << what;
    }
    for (const auto& [name, g] : want) {
      ASSERT_TRUE(got.count(name)) << what << " " << name;
      EXPECT_TRUE(torch::allclose(got[name], g, 1e-4, 1e-7))
          << what << " " << name << ": max diff " << (got[name] - g).abs().max().item<double>();
    }
  });
  for (const auto& e : errors) ASSERT_EQ(e, "") << c.strategy << " world " << c.world;
}

TEST(ShardedClipTest, GlobalNormAcrossShardsEqualsTheUnshardedClip) {
  for (const char* strategy : {"full_shard", "shard_grad_op", "no_shard"}) {
    for (int world : {1, 2, 4}) expectClippedAsUnsharded({strategy, world, ClipScope::kGlobal, 1e-3});
  }
  expectClippedAsUnsharded({"hybrid_shard", 4, ClipScope::kGlobal, 1e-3});
}

TEST(ShardedClipTest, PerUnitClippingEqualsClippingEachUnitAlone) {
  for (int world : {1, 2, 4}) expectClippedAsUnsharded({"full_shard", world, ClipScope::kPerUnit, 1e-3});
  expectClippedAsUnsharded({"hybrid_shard", 4, ClipScope::kPerUnit, 1e-3});
}

}  // namespace
}  // namespace fs::fsdp
