// NOTE [Node-shared shards] through ShardedModel, on 2 ranks as threads over
// the shared-memory transport: training with node-shared shards is bit for
// bit training with private ones; a gather issues no collective, so one rank
// runs a whole forward and backward while its peer has not started; a shard
// written outside beginShardWrite / endShardWrite is refused by name.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <future>
#include <map>
#include <mutex>

#include "backend/fsdp/sharded_model.h"
#include "tests/backend/distributed/thread_ranks.h"
#include "tests/backend/fsdp/sharded_flamingo.h"

namespace fs::fsdp {
namespace {

using namespace fs::fsdp::testing;

std::shared_ptr<distributed::Communicator> borrowed(distributed::Communicator& comm) {
  return {&comm, [](auto*) {}};
}

mt::Batch batchOf(const std::string& family) {
  std::lock_guard<std::mutex> lock(rngMutex());
  return mt::tinyBatch(mt::tinyOptions(family));
}

// Plain SGD on the trainable shards, inside the write protocol.
void sgdStep(ShardedModel& sharded, double lr) {
  torch::NoGradGuard noGrad;
  sharded.beginShardWrite();
  for (auto& s : sharded.trainableShards()) {
    if (s.grad().defined()) s.sub_(s.grad() * lr);
    s.mutable_grad() = torch::Tensor();
  }
  sharded.endShardWrite();
}

struct Training {
  std::vector<double> losses;                   // rank 0's, per step
  std::map<std::string, torch::Tensor> shards;  // "rank/unit/flat" -> final shard
  std::vector<int64_t> forwardCollectives;      // per rank: collectives issued during the forwards
  std::vector<std::string> whyNotShared;        // per rank ("" when shared)
};

// Three steps of two passes each (two batches, as two datasets), reductions left in flight between passes as
// the trainer does.
Training train(bool sharedShards) {
  const mt::Batch batches[2] = {batchOf("opt"), batchOf("opt")};  // two datasets: two passes a step
  Training run;
  run.forwardCollectives.assign(2, 0);
  run.whyNotShared.assign(2, "");
  std::mutex mu;
  const auto errors = fs::testing::runThreadRanks(2, [&](distributed::Communicator& comm) {
    Flamingo m = buildModel("opt", false);
    comm.barrier("models built");
    ShardingOptions o;
    o.sharedShards = sharedShards;
    o.forwardPrefetch = true;
    o.backwardPrefetch = ShardingOptions::BackwardPrefetch::kPre;
    o.limitAllGathers = 2;
    auto sharded = std::make_shared<ShardedModel>(*m, flamingoUnits(m), borrowed(comm), o);
    m->setUnitHooks(sharded);
    sharded->setReduceDuringBackward(true);
    int64_t forwardCollectives = 0;
    std::vector<double> losses;
    for (int step = 0; step < 3; ++step) {
      double stepLoss = 0;
      for (int pass = 0; pass < 2; ++pass) {
        const int64_t before = comm.tracker().snapshot().seq;
        sharded->beginForward();
        const mt::Batch& batch = batches[pass];
        const int64_t rows = batch.input_ids.size(0) / 2;
        const double targets = batch.attention_mask.slice(1, 1).sum().item<double>();
        torch::Tensor loss = lossOf(m, batch, comm.rank() * rows, rows, targets);
        forwardCollectives += comm.tracker().snapshot().seq - before;
        stepLoss += loss.item<double>();
        sharded->beginBackward();
        loss.backward();
        sharded->finishBackward(/*settle=*/false);
      }
      sharded->settleGradients();
      losses.push_back(stepLoss);
      sgdStep(*sharded, 0.5);
    }
    m->setUnitHooks(nullptr);
    std::lock_guard<std::mutex> lock(mu);
    const auto r = static_cast<size_t>(comm.rank());
    run.forwardCollectives[r] = forwardCollectives;
    run.whyNotShared[r] = sharded->shardsShared() ? "" : sharded->whyShardsNotShared();
    if (r == 0) run.losses = losses;
    for (size_t u = 0; u < sharded->units().size(); ++u) {
      const auto& unit = sharded->units()[u];
      for (size_t k = 0; k < unit.flats.size(); ++k) {
        run.shards[std::to_string(r) + "/" + unit.path + "/" + std::to_string(k)] =
            unit.flats[k]->shard().detach().clone();
      }
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  return run;
}

TEST(NodeSharedShards, TrainBitForBitLikePrivateShardsWithoutCollectivesInForward) {
  const Training priv = train(false);
  const Training shared = train(true);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(priv.whyNotShared[r], "") << "rank " << r << ": sharedShards=false must keep private shards";
    EXPECT_EQ(shared.whyNotShared[r], "") << "rank " << r << " did not share its shards";
    // Private shards gather through collectives; shared ones copy the peers' slices.
    EXPECT_GT(priv.forwardCollectives[r], 0) << "rank " << r;
    EXPECT_EQ(shared.forwardCollectives[r], 0) << "rank " << r << ": a forward issued collectives";
  }
  ASSERT_EQ(shared.losses.size(), 3u);
  for (size_t s = 0; s < 3; ++s) EXPECT_EQ(shared.losses[s], priv.losses[s]) << "step " << s;
  EXPECT_NE(shared.losses.front(), shared.losses.back()) << "the SGD steps changed nothing";
  ASSERT_EQ(shared.shards.size(), priv.shards.size());
  for (const auto& [key, t] : priv.shards) {
    ASSERT_TRUE(shared.shards.count(key)) << key;
    EXPECT_TRUE(torch::equal(shared.shards.at(key), t)) << key;
  }
}

TEST(NodeSharedShards, OneRankRunsAWholePassBeforeItsPeerStartsOne) {
  const mt::Batch batch = batchOf("opt");
  const int64_t B = batch.input_ids.size(0);
  const double targets = batch.attention_mask.slice(1, 1).sum().item<double>();
  std::promise<void> aheadDone;
  auto ahead = aheadDone.get_future();
  const auto errors = fs::testing::runThreadRanks(2, [&](distributed::Communicator& comm) {
    Flamingo m = buildModel("opt", false);
    comm.barrier("models built");
    auto sharded = std::make_shared<ShardedModel>(*m, flamingoUnits(m), borrowed(comm), ShardingOptions{});
    ASSERT_TRUE(sharded->shardsShared()) << sharded->whyShardsNotShared();
    m->setUnitHooks(sharded);
    sharded->setReduceDuringBackward(true);
    if (comm.rank() == 0) {
      // Only a hang guard: rank 1 needs nothing from this rank for its pass.
      ASSERT_EQ(ahead.wait_for(std::chrono::minutes(2)), std::future_status::ready)
          << "rank 1 could not finish a pass while rank 0 had not started: its gathers waited for a peer";
    }
    const int64_t rows = B / 2;
    sharded->beginForward();
    torch::Tensor loss = lossOf(m, batch, comm.rank() * rows, rows, targets);
    sharded->beginBackward();
    loss.backward();
    sharded->finishBackward(/*settle=*/false);
    if (comm.rank() == 1) aheadDone.set_value();
    sharded->settleGradients();
    for (const auto& s : sharded->trainableShards()) EXPECT_TRUE(s.grad().defined());
    sgdStep(*sharded, 0.1);
    m->setUnitHooks(nullptr);
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

TEST(NodeSharedShards, AShardWrittenOutsideTheProtocolIsRefusedByName) {
  const auto errors = fs::testing::runThreadRanks(2, [&](distributed::Communicator& comm) {
    Flamingo m = buildModel("opt", false);
    comm.barrier("models built");
    auto sharded = std::make_shared<ShardedModel>(*m, flamingoUnits(m), borrowed(comm), ShardingOptions{});
    ASSERT_TRUE(sharded->shardsShared()) << sharded->whyShardsNotShared();
    {
      torch::NoGradGuard noGrad;
      sharded->trainableShards().front().add_(1.0);
    }
    try {
      sharded->beginForward();
      ADD_FAILURE() << "rank " << comm.rank() << ": a shard written in place went unnoticed";
    } catch (const c10::Error& e) {
      const std::string what = e.what_without_backtrace();
      EXPECT_NE(what.find("written outside ShardedModel::beginShardWrite()"), std::string::npos) << what;
      EXPECT_NE(what.find("perceiver"), std::string::npos) << what;
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

}  // namespace
}  // namespace fs::fsdp
