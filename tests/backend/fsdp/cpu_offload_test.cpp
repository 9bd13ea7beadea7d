// NOTE [CPU offload] through ShardedModel on the CPU, on 2 Gloo ranks as
// threads: with offloadShards every gather copies the shard to a buffer of
// its own on the compute device (here host to host) and every reduced chunk
// lands in host memory before it is added, the path a GPU run takes. Training
// with it is bit for bit training without it, under full_shard (with
// prefetch, reductions during backward and two passes a step), no_shard
// (whose solo shard group is gathered only when offloaded); the shards, their
// gradients and the optimizer's updates stay in host memory, apart from the
// full buffers the members view. Casts around an offloaded shard:
// flat_param_test. A CUDA case (one rank; skips without a GPU) runs the same
// with the streams active and the shards in pinned host memory.
#include <gtest/gtest.h>
#include <torch/torch.h>

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

struct OffloadCase {
  std::string name;
  Strategy strategy = Strategy::kFullShard;
};

struct Training {
  std::vector<double> losses;                   // rank 0's, per step
  std::map<std::string, torch::Tensor> shards;  // "rank/unit/flat" -> final shard
  // Facts rank 0 saw with offloading on (empty lists when off).
  c10::Device shardDevice = c10::kCPU;
  std::string whyNotShared;
  int64_t gatheredInForward = 0;  // full-buffer bytes held right after the first forward's loss
  std::vector<std::string> placementErrors;
};

// Three steps of two passes each, SGD on the trainable shards between steps, as the trainer runs them
// (finishBackward without settling, one settle a step).
Training train(const OffloadCase& setup, bool offload) {
  const mt::Batch batches[2] = {batchOf("opt"), batchOf("opt")};
  Training run;
  std::mutex mu;
  const auto errors = fs::testing::runThreadRanks(2, [&](distributed::Communicator& comm) {
    Flamingo m = buildModel("opt", false);
    comm.barrier("models built");
    ShardingOptions o;
    o.strategy = setup.strategy;
    o.offloadShards = offload;
    o.sharedShards = offload;  // kept in place: private, like offloaded ones (which ignore the setting)
    o.forwardPrefetch = true;
    o.backwardPrefetch = ShardingOptions::BackwardPrefetch::kPre;
    o.limitAllGathers = 2;
    auto sharded = std::make_shared<ShardedModel>(*m, flamingoUnits(m), borrowed(comm), o);
    m->setUnitHooks(sharded);
    sharded->setReduceDuringBackward(true);
    std::vector<std::string> bad;
    const auto place = [&](const std::string& when) {
      for (const auto& u : sharded->units()) {
        for (const auto& f : u.flats) {
          const std::string at = when + ": " + u.path + " " + f->members().front().name;
          if (f->offloaded() != offload) bad.push_back(at + " offloaded() disagrees");
          if (f->shardDevice() != sharded->shardDevice())
            bad.push_back(at + " shard not on the shard device");
          const auto* shard = f->shard().data_ptr();
          const auto& param = f->members().front().param;
          // Offloaded: the members never view the shard's memory, gathered or not.
          if (offload && param.storage().nbytes() > 0 && param.storage().data() == shard)
            bad.push_back(at + " members view the offloaded shard");
          const torch::Tensor& g = f->shard().grad();
          if (g.defined() && g.device() != sharded->shardDevice())
            bad.push_back(at + " gradient off the shard device");
        }
      }
    };
    place("built");
    std::vector<double> losses;
    int64_t gatheredInForward = -1;
    for (int step = 0; step < 3; ++step) {
      double stepLoss = 0;
      for (int pass = 0; pass < 2; ++pass) {
        sharded->beginForward();
        const mt::Batch& batch = batches[pass];
        const int64_t rows = batch.input_ids.size(0) / 2;
        const double targets = batch.attention_mask.slice(1, 1).sum().item<double>();
        torch::Tensor loss = lossOf(m, batch, comm.rank() * rows, rows, targets);
        if (gatheredInForward < 0) gatheredInForward = sharded->gatheredBytes();
        place("forward");
        stepLoss += loss.item<double>();
        sharded->beginBackward();
        loss.backward();
        sharded->finishBackward(/*settle=*/false);
      }
      sharded->settleGradients();
      place("settled");
      if (sharded->gatheredBytes() != 0) bad.push_back("units still gathered after backward");
      losses.push_back(stepLoss);
      torch::NoGradGuard noGrad;
      sharded->beginShardWrite();
      for (auto& s : sharded->trainableShards()) {
        if (s.grad().defined()) s.sub_(s.grad() * 0.5);
        s.mutable_grad() = torch::Tensor();
      }
      sharded->endShardWrite();
    }
    place("stepped");
    m->setUnitHooks(nullptr);
    std::lock_guard<std::mutex> lock(mu);
    const auto r = static_cast<size_t>(comm.rank());
    if (r == 0) {
      run.losses = losses;
      run.shardDevice = sharded->shardDevice();
      run.whyNotShared = sharded->shardsShared() ? "" : sharded->whyShardsNotShared();
      run.gatheredInForward = gatheredInForward;
      run.placementErrors = bad;
    }
    for (const auto& unit : sharded->units()) {
      for (size_t k = 0; k < unit.flats.size(); ++k) {
        run.shards[std::to_string(r) + "/" + unit.path + "/" + std::to_string(k)] =
            unit.flats[k]->shard().detach().clone();
      }
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  return run;
}

class CpuOffloadTest : public ::testing::TestWithParam<OffloadCase> {};

TEST_P(CpuOffloadTest, TrainsBitForBitLikeShardsKeptInPlace) {
  const OffloadCase& setup = GetParam();
  const Training kept = train(setup, false);
  const Training offloaded = train(setup, true);
  EXPECT_EQ(offloaded.shardDevice, c10::Device(c10::kCPU));
  EXPECT_NE(offloaded.whyNotShared.find("parallel.cpu_offload"), std::string::npos) << offloaded.whyNotShared;
  for (const auto& e : offloaded.placementErrors) ADD_FAILURE() << e;
  for (const auto& e : kept.placementErrors) ADD_FAILURE() << e;
  if (setup.strategy == Strategy::kNoShard) {
    // A solo shard group views its shard in place; offloaded, it is gathered through a copy.
    EXPECT_EQ(kept.gatheredInForward, 0);
    EXPECT_GT(offloaded.gatheredInForward, 0);
  }
  ASSERT_EQ(offloaded.losses.size(), 3u);
  for (size_t s = 0; s < 3; ++s) EXPECT_EQ(offloaded.losses[s], kept.losses[s]) << "step " << s;
  EXPECT_NE(offloaded.losses.front(), offloaded.losses.back()) << "the SGD steps changed nothing";
  ASSERT_EQ(offloaded.shards.size(), kept.shards.size());
  for (const auto& [key, t] : kept.shards) {
    ASSERT_TRUE(offloaded.shards.count(key)) << key;
    EXPECT_TRUE(torch::equal(offloaded.shards.at(key), t)) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, CpuOffloadTest,
                         ::testing::Values(OffloadCase{"full_shard", Strategy::kFullShard},
                                           OffloadCase{"no_shard", Strategy::kNoShard}),
                         [](const auto& info) { return info.param.name; });

// On a GPU (skips without one): one rank on CUDA, shards offloaded to pinned host memory against shards
// on the device: the same losses and shards (within float tolerance: CUDA's backward kernels may sum in
// another order), the shards and their gradients in host memory, the streams active.
TEST(CpuOffloadCuda, OneRankTrainsLikeShardsOnTheDevice) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device cuda(torch::kCUDA, 0);
  const mt::Batch host = batchOf("opt");
  const mt::Batch batch{host.vision_x.to(cuda), host.input_ids.to(cuda), host.attention_mask.to(cuda)};
  const double targets = host.attention_mask.slice(1, 1).sum().item<double>();
  const int64_t rows = host.input_ids.size(0);
  std::map<bool, std::vector<double>> losses;
  std::map<bool, std::vector<torch::Tensor>> shards;
  for (const bool offload : {false, true}) {
    Flamingo m = buildModel("opt", false);
    m->to(cuda);
    ShardingOptions o;
    o.offloadShards = offload;
    o.forwardPrefetch = true;
    o.backwardPrefetch = ShardingOptions::BackwardPrefetch::kPre;
    auto sharded =
        std::make_shared<ShardedModel>(*m, flamingoUnits(m), distributed::makeSoloCommunicator(), o);
    m->setUnitHooks(sharded);
    sharded->setReduceDuringBackward(true);
    EXPECT_TRUE(sharded->streams().active());
    EXPECT_EQ(sharded->computeDevice(), cuda);
    EXPECT_EQ(sharded->shardDevice(), offload ? torch::Device(torch::kCPU) : cuda);
    for (int step = 0; step < 3; ++step) {
      sharded->beginForward();
      torch::Tensor loss = lossOf(m, batch, 0, rows, targets);
      sharded->beginBackward();
      loss.backward();
      sharded->finishBackward();
      losses[offload].push_back(loss.item<double>());
      torch::NoGradGuard noGrad;
      for (auto& s : sharded->trainableShards()) {
        if (!s.grad().defined()) continue;
        EXPECT_EQ(s.grad().device(), sharded->shardDevice());
        if (offload) EXPECT_TRUE(s.is_pinned());
        s.sub_(s.grad() * 0.5);
        s.mutable_grad() = torch::Tensor();
      }
    }
    for (const auto& s : sharded->trainableShards()) shards[offload].push_back(s.detach().to(torch::kCPU));
    m->setUnitHooks(nullptr);
  }
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(losses[true][i], losses[false][i], 1e-5 * std::abs(losses[false][i]));
  ASSERT_EQ(shards[true].size(), shards[false].size());
  for (size_t i = 0; i < shards[true].size(); ++i)
    EXPECT_TRUE(torch::allclose(shards[true][i], shards[false][i], 1e-5, 1e-6)) << "shard " << i;
}

}  // namespace
}  // namespace fs::fsdp
