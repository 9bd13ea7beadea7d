// Collectives on CUDA tensors (label gpu: "Not Run" without a CUDA device).
// - NCCL at world size 1 (one GPU here; the device group beside the Gloo host
//   group, NOTE [Host and device groups]): every collective of the Communicator
//   interface against its definition, synchronous and async, float32 / bfloat16
//   / int64, odd sizes, and a CPU tensor refused with an error naming the
//   collective instead of a crash.
// - Two ranks on one GPU over Gloo with CUDA tensors (threads as ranks,
//   thread_ranks.h): the collectives c10d's Gloo implements for CUDA tensors,
//   against the naive definition computed on the CPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "backend/distributed/communicator.h"
#include "backend/distributed/rendezvous.h"
#include "tests/backend/distributed/thread_ranks.h"

namespace fs::distributed {
namespace {

const torch::Device kGpu(torch::kCUDA, 0);

torch::Tensor input(int rank, int64_t n, torch::ScalarType dtype, int caseId) {
  torch::manual_seed(1000 * caseId + rank);
  auto t =
      dtype == torch::kInt64 ? torch::randint(-1000, 1000, {n}, torch::kInt64) : torch::randn({n}).to(dtype);
  return t.to(kGpu);
}

std::vector<std::string> runRanks(int world, const std::string& backend,
                                  const std::function<void(Communicator&)>& body) {
  const int port = testing::freePort();
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        RendezvousOptions o;
        o.rank = r;
        o.world = world;
        o.localWorld = world;
        o.masterPort = port;
        o.backend = backend;
        o.identity = "cuda collectives";
        o.sharedMemory = false;  // CUDA tensors: the Gloo path itself
        auto joined = joinRun(o);
        if (!joined) throw std::runtime_error(joined.status().message());
        body((*joined)->device());  // NOTE [Host and device groups]: NCCL is the device group
        (*joined)->host().barrier("test end");
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

void expectNoErrors(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

TEST(NcclWorldOne, EveryCollectiveIsItsDefinition) {
  expectNoErrors(runRanks(1, "nccl", [](Communicator& c) {
    EXPECT_EQ(c.backendName(), "nccl");
    int caseId = 0;
    for (auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kInt64}) {
      for (int64_t n : {1, 7, 4099}) {
        ++caseId;
        const auto x = input(0, n, dtype, caseId);
        for (auto op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
          auto t = x.clone();
          c.allReduce(t, op, "all_reduce");
          EXPECT_TRUE(torch::equal(t, x));
          auto a = x.clone();
          c.allReduceAsync(a, op, "all_reduce async")->wait();
          EXPECT_TRUE(torch::equal(a, x));
        }
        auto b = x.clone();
        c.broadcast(b, 0, "broadcast");
        EXPECT_TRUE(torch::equal(b, x));
        auto out = torch::full_like(x, 3);
        c.allGather(out, x, "all_gather");
        EXPECT_TRUE(torch::equal(out, x));
        auto outAsync = torch::full_like(x, 3);
        c.allGatherAsync(outAsync, x, "all_gather async")->wait();
        EXPECT_TRUE(torch::equal(outAsync, x));
        auto shard = torch::full_like(x, 3);
        c.reduceScatter(shard, x, ReduceOp::kSum, "reduce_scatter");
        EXPECT_TRUE(torch::equal(shard, x));
        auto shardAsync = torch::full_like(x, 3);
        c.reduceScatterAsync(shardAsync, x, ReduceOp::kSum, "reduce_scatter async")->wait();
        EXPECT_TRUE(torch::equal(shardAsync, x));
        EXPECT_EQ(out.device(), kGpu);
      }
    }
    auto sub = c.split({{0}}, "sub");
    auto t = input(0, 5, torch::kFloat32, 99);
    auto copy = t.clone();
    sub->allReduce(copy, ReduceOp::kSum, "sub all_reduce");
    EXPECT_TRUE(torch::equal(copy, t));
    auto onCpu = torch::ones({4});
    try {
      c.allReduce(onCpu, ReduceOp::kSum, "cpu tensor");
      ADD_FAILURE() << "NCCL accepted a CPU tensor";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("cpu tensor"), std::string::npos) << e.what();
    }
  }));
}

TEST(GlooTwoRanksOneGpu, CollectivesOnCudaTensorsMatchTheDefinition) {
  constexpr int kWorld = 2;
  expectNoErrors(runRanks(kWorld, "gloo", [](Communicator& c) {
    const int r = c.rank();
    int caseId = 0;
    for (int64_t n : {1, 6, 1001}) {
      ++caseId;
      std::vector<torch::Tensor> all;
      for (int k = 0; k < kWorld; ++k) all.push_back(input(k, n * kWorld, torch::kFloat32, caseId).cpu());
      const auto mine = all[static_cast<size_t>(r)].to(kGpu);
      auto sum = mine.clone();
      c.allReduce(sum, ReduceOp::kSum, "all_reduce");
      EXPECT_EQ(sum.device(), kGpu);
      EXPECT_TRUE(torch::allclose(sum.cpu(), all[0] + all[1]));
      auto max = mine.clone();
      c.allReduce(max, ReduceOp::kMax, "all_reduce max");
      EXPECT_TRUE(torch::equal(max.cpu(), torch::maximum(all[0], all[1])));
      auto b = mine.clone();
      c.broadcast(b, 1, "broadcast");
      EXPECT_TRUE(torch::equal(b.cpu(), all[1]));
      auto gathered = torch::empty({n * kWorld * kWorld}, mine.options());
      c.allGather(gathered, mine, "all_gather");
      EXPECT_TRUE(torch::equal(gathered.cpu(), torch::cat({all[0], all[1]})));
      auto shard = torch::empty({n}, mine.options());
      c.reduceScatter(shard, mine, ReduceOp::kSum, "reduce_scatter");
      EXPECT_TRUE(torch::allclose(shard.cpu(), (all[0] + all[1]).narrow(0, r * n, n)));
    }
  }));
}

}  // namespace
}  // namespace fs::distributed
