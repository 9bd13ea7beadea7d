// group_routing_test: every collective of a multi-rank run goes to the group
// its tensor belongs to (NOTE [Host and device groups] in
// backend/distributed/groups.h): host tensors to the Gloo host group, tensors on the
// rank's device to the device group (NCCL on GPUs). A NCCL group refuses a
// host tensor, and Gloo would carry a GPU's gradients through host memory;
// neither shows on a CPU run, whose host and device are one.
//
// So the ranks train on a stand-in device (stand_in_device.h, NOTE [A
// stand-in device]): a device of its own, not the CPU, whose kernels are the
// CPU's. Every tensor a GPU run puts on the GPU is on the stand-in here (the
// model moved with Module::to, batches with .to, whatever is made from them
// or with their options), and the host code's own tensors (flags, counts,
// losses gathered by value) stay on the CPU. Each rank's groups are wrapped
// in a RoutingCheck (routing_check.h) through TrainerOptions::wrapGroups: it
// refuses a CPU tensor on the device group and a stand-in tensor on the host
// group, naming the collective and the function that issued it, and hands
// the device group's tensors to the real Gloo group as CPU tensors over the
// same memory. Over Gloo alone the engine's host and device groups are one
// communicator; the two wrappers share it, so the collectives meet in the
// same order as in any Gloo run. The device group's wrapper offers no
// node-shared shards, as NCCL does not.
//
// Runs: 2 and 4 ranks under DDP and every FSDP strategy (full_shard,
// shard_grad_op, no_shard, and hybrid_shard on 2 "nodes" x 2), and one FSDP
// run on generated shards with validation and sharded checkpoints. Each must
// finish on every rank with both groups used, and train as the same ranks do
// on the CPU (losses within 1e-5, final weights as rank_runs.h compares
// them; on this build the losses agree bit for bit, but the stand-in skips
// the model's CPU-only fast paths, which need not round alike). The ranks are
// processes: this binary runs itself again as each rank
// (GroupRoutingWorker.Rank), which calls runTraining with the stand-in and the
// check.
//
// What it cannot show: NCCL itself, and the order of two separate groups
// (here one Gloo communicator carries both); a tensor the engine keeps on the
// host where a GPU run would too is a host tensor here as there, so the check
// is exactly as good as the engine's own placement, which is what it tests.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "backend/distributed/groups.h"
#include "backend/launch/world_env.h"
#include "backend/trainer/device_choice.h"
#include "backend/trainer/trainer.h"
#include "tests/backend/distributed/rank_processes.h"
#include "tests/backend/trainer/rank_runs.h"
#include "tests/backend/trainer/routing_check.h"
#include "tests/backend/trainer/stand_in_device.h"
#ifdef FS_TEST_WITH_CODECS
#include "backend/data/shardgen/synthetic_shards.h"
#endif

namespace fs::trainer {
namespace {

namespace fsys = std::filesystem;
using testing::RoutingCheck;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int64_t envInt(const char* name, int64_t fallback) {
  const std::string v = env(name);
  return v.empty() ? fallback : std::stoll(v);
}

// ---- the rank process ----------------------------------------------------------------------

// One rank of a run the tests below start: FS_ROUTING_CONFIG, FS_ROUTING_RUN_DIR, FS_ROUTING_DEVICE (stand-in
// | cpu) and torchrun's variables. Prints what went through each group.
TEST(GroupRoutingWorker, Rank) {
  const std::string configPath = env("FS_ROUTING_CONFIG");
  if (configPath.empty()) GTEST_SKIP() << "only run as a rank process by the tests below";
  auto load = protocol::loadConfigFile(configPath);
  ASSERT_TRUE(load.ok()) << protocol::formatProblems(load.problems);
  TrainerOptions o;
  o.rank = envInt("RANK", 0);
  o.world = envInt("WORLD_SIZE", 1);
  o.localWorld = envInt("LOCAL_WORLD_SIZE", o.world);
  o.masterAddr = env("MASTER_ADDR");
  o.masterPort = envInt("MASTER_PORT", 29500);
  o.host = launch::localHostName();
  o.logInfoToStderr = true;
  std::vector<std::shared_ptr<RoutingCheck>> checks;  // host group, device group
  if (env("FS_ROUTING_DEVICE") == "stand-in") {
    o.device = testing::standInDevice();
    o.wrapGroups = [&](distributed::RankGroups& groups) {
      testing::checkRouting(groups, *o.device);
      checks = {std::dynamic_pointer_cast<RoutingCheck>(groups.host),
                std::dynamic_pointer_cast<RoutingCheck>(groups.device)};
    };
  }
  auto outcome = runTraining(load.config, env("FS_ROUTING_RUN_DIR"), o);
  if (checks.size() == 2) {
    std::cout << "ROUTED host " << checks[0]->passed() << " device " << checks[1]->passed() << std::endl;
  }
  for (const auto& op : testing::mixedOps()) std::cout << "MIXED " << op << std::endl;
  ASSERT_TRUE(outcome) << outcome.status().message();
  EXPECT_EQ(outcome.value(), TrainOutcome::kFinished);
}

// ---- the tests -----------------------------------------------------------------------------

struct RoutedRun {
  test::RunOutput out;
  // Per rank: collectives on the host group, on the device group.
  std::vector<std::pair<int64_t, int64_t>> routed;
  std::set<std::string> mixed;  // ops that took stand-in and CPU tensors (stand_in_device.h: mixedOps)
};

class GroupRoutingTest : public test::RankRunTest {
 protected:
  std::string prefix() const override { return "fs-routing"; }

  // Global batches of 8 LAION and 8 MMC4 samples over `world` ranks on `nodes` nodes, 4 steps.
  static protocol::RunConfig config(int world, std::vector<std::string> extra, int nodes = 1) {
    auto sets = test::rankRunSets(world, 8, 8, 4);
    sets.insert(sets.end(), {"launch.nproc_per_node=" + std::to_string(world / nodes),
                             "launch.nnodes=" + std::to_string(nodes)});
    if (nodes > 1) sets.push_back("launch.kind=external");
    sets.insert(sets.end(), extra.begin(), extra.end());
    return test::tinyConfig(sets);
  }

  // `world` ranks of this binary on `cfg`, `perNode` to a node, on the stand-in device with the routing check
  // or on the CPU without it.
  RoutedRun run(const std::string& name, int world, int perNode, const protocol::RunConfig& cfg,
                bool standIn) {
    RoutedRun r;
    r.out.dir = root_ / name;
    const auto cfgPath = root_ / (name + ".yaml");
    EXPECT_TRUE(protocol::saveConfigFile(cfg, cfgPath.string()).isOk());
    const int port = fs::testing::freePort();
    std::vector<pid_t> pids;
    std::vector<fsys::path> logs;
    for (int rank = 0; rank < world; ++rank) {
      const std::map<std::string, std::string> e = {{"RANK", std::to_string(rank)},
                                                    {"WORLD_SIZE", std::to_string(world)},
                                                    {"LOCAL_RANK", std::to_string(rank % perNode)},
                                                    {"LOCAL_WORLD_SIZE", std::to_string(perNode)},
                                                    {"MASTER_ADDR", "127.0.0.1"},
                                                    {"MASTER_PORT", std::to_string(port)},
                                                    {"OMP_NUM_THREADS", "1"},
                                                    {"FS_ROUTING_CONFIG", cfgPath.string()},
                                                    {"FS_ROUTING_RUN_DIR", r.out.dir.string()},
                                                    {"FS_ROUTING_DEVICE", standIn ? "stand-in" : "cpu"}};
      logs.push_back(root_ / (name + ".rank" + std::to_string(rank) + ".out"));
      pids.push_back(fs::testing::spawnWithEnv(
          {fsys::read_symlink("/proc/self/exe").string(), "--gtest_filter=GroupRoutingWorker.Rank"}, e,
          logs.back()));
    }
    r.out.exits = fs::testing::waitAll(pids, logs, std::chrono::seconds(600));
    for (int rank = 0; rank < world; ++rank) {
      const auto& exit = r.out.exits[static_cast<size_t>(rank)];
      EXPECT_EQ(exit.code, 0) << name << " rank " << rank << ":\n" << exit.output;
      std::istringstream lines(exit.output);
      std::string line;
      while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::string tag, host, device;
        int64_t h = 0, d = 0;
        if (line.rfind("MIXED ", 0) == 0) r.mixed.insert(line.substr(6));
        if (words >> tag >> host >> h >> device >> d && tag == "ROUTED") r.routed.emplace_back(h, d);
      }
    }
    testing::standInDevice();  // the checkpoint's optimizer state says standin:0, as a GPU run's says cuda:0
    test::readRunResults(&r.out);
    return r;
  }

  // The run on the stand-in passes the check on every rank, uses both groups, and trains as on the CPU
  // (losses, and with `finalState` the final checkpoint's tensors).
  RoutedRun expectRouted(const std::string& name, int world, int perNode, const protocol::RunConfig& cfg,
                         bool finalState = true) {
    const RoutedRun onCpu = run(name + "-cpu", world, perNode, cfg, /*standIn=*/false);
    RoutedRun standIn = run(name, world, perNode, cfg, /*standIn=*/true);
    EXPECT_EQ(standIn.routed.size(), static_cast<size_t>(world)) << name << ": not every rank reported";
    for (size_t rank = 0; rank < standIn.routed.size(); ++rank) {
      EXPECT_GT(standIn.routed[rank].first, 0) << name << " rank " << rank << ": nothing on the host group";
      EXPECT_GT(standIn.routed[rank].second, 0)
          << name << " rank " << rank << ": nothing on the device group";
      EXPECT_EQ(standIn.routed[rank], standIn.routed[0]) << name << ": ranks issued different collectives";
    }
    if (!standIn.routed.empty()) {
      std::cout << name << ": collectives per rank: " << standIn.routed[0].first << " on the host group, "
                << standIn.routed[0].second << " on the device group" << std::endl;
    }
    // Not an error here (a GPU accepts some of them: index ops with host indices), but worth seeing.
    for (const auto& op : standIn.mixed) std::cout << name << ": mixes devices: " << op << std::endl;
    const std::string what = name + " on the stand-in against the CPU";
    if (finalState) {
      test::expectSameRun(onCpu.out, standIn.out, what, 1e-5, 1e-4);
      return standIn;
    }
    EXPECT_EQ(onCpu.out.losses.size(), standIn.out.losses.size()) << what;
    EXPECT_FALSE(onCpu.out.losses.empty()) << what;
    for (size_t i = 0; i < std::min(onCpu.out.losses.size(), standIn.out.losses.size()); ++i) {
      for (const auto& [dataset, l] : onCpu.out.losses[i]) {
        EXPECT_NEAR(standIn.out.losses[i].at(dataset), l, 1e-5 * std::abs(l)) << what << " step " << i + 1;
      }
    }
    return standIn;
  }
};

TEST_F(GroupRoutingTest, TwoRanksDdpAndEveryFsdpStrategy) {
  expectRouted("ddp2", 2, 2, config(2, {"parallel.mode=ddp"}));
  for (const std::string strategy : {"full_shard", "shard_grad_op", "no_shard"}) {
    expectRouted(strategy + "2", 2, 2,
                 config(2, {"parallel.mode=fsdp", "parallel.sharding_strategy=" + strategy}));
  }
}

TEST_F(GroupRoutingTest, FourRanksDdpAndEveryFsdpStrategy) {
  expectRouted("ddp4", 4, 4, config(4, {"parallel.mode=ddp"}));
  for (const std::string strategy : {"full_shard", "shard_grad_op", "no_shard"}) {
    expectRouted(strategy + "4", 4, 4,
                 config(4, {"parallel.mode=fsdp", "parallel.sharding_strategy=" + strategy}));
  }
  expectRouted("hybrid_shard4", 4, 2,
               config(4, {"parallel.mode=fsdp", "parallel.sharding_strategy=hybrid_shard"}, /*nodes=*/2));
}

#ifdef FS_TEST_WITH_CODECS
// Generated shards: the data-ready round on a real pipeline, validation (its batch agreement and loss sums)
// and sharded checkpoints (the writers' agreements on the host group, the shards' gathers on the device
// group).
TEST_F(GroupRoutingTest, ValidationAndShardedCheckpointsUnderFsdp) {
  data::SyntheticShardOptions held;
  held.outDir = (root_ / "held-out").string();
  held.laionShards = 2;  // one per rank
  held.laionSamplesPerShard = 8;
  held.mmc4Shards = 1;
  held.mmc4DocsPerShard = 8;
  held.imageWidth = 64;
  held.imageHeight = 48;
  held.seed = 7;
  auto val = data::writeSyntheticShards(held);
  ASSERT_TRUE(val) << val.status().message();
  auto cfg = config(2, {"parallel.mode=fsdp", "checkpoint.format=sharded", "checkpoint.every_steps=2",
                        "data.val_every_steps=2", "data.val_batches=2",
                        "data.datasets.laion.val_shards=" + val->laionShards});
  cfg.data.source = "generated";
  const RoutedRun r = expectRouted("validation", 2, 2, cfg, /*finalState=*/false);
  int validations = 0, checkpoints = 0;
  for (const auto& e : r.out.events) {
    validations += std::holds_alternative<protocol::ValidationEvent>(e.body) ? 1 : 0;
    checkpoints += std::holds_alternative<protocol::CheckpointEvent>(e.body) ? 1 : 0;
  }
  EXPECT_EQ(validations, 2) << "validation at steps 2 and 4";
  EXPECT_GE(checkpoints, 2) << "sharded checkpoints at steps 2 and 4";
}
#endif

}  // namespace

// Sends `t` on `group` as the gradients; not in the anonymous namespace, so that the refusal can name it.
void sendGradientsForTheRoutingTest(distributed::Communicator& group, torch::Tensor t);
[[gnu::noinline]] void sendGradientsForTheRoutingTest(distributed::Communicator& group, torch::Tensor t) {
  group.allReduce(t, distributed::ReduceOp::kSum, "gradients on the wrong group");
}

namespace {

// parallel.dist_backend nccl on a rank without a GPU stops before joining, naming the field (auto picks
// Gloo).
TEST(GroupRoutingBackend, NcclWithoutAGpuStopsNamingTheField) {
  if (currentDeviceFacts().cudaDevices > 0) GTEST_SKIP() << "parallel.device auto picks the GPU here";
  const auto dir = fsys::temp_directory_path() / ("fs-routing-nccl-" + std::to_string(::getpid()));
  fsys::remove_all(dir);
  TrainerOptions o;
  o.world = 2;
  o.localWorld = 2;
  o.installSignalHandlers = false;
  auto outcome = runTraining(test::tinyConfig({"parallel.dist_backend=nccl"}), dir, o);
  ASSERT_FALSE(outcome);
  EXPECT_NE(
      outcome.status().message().find("parallel.dist_backend: nccl carries tensors on CUDA devices only, "
                                      "but this rank trains on cpu"),
      std::string::npos)
      << outcome.status().message();
  fsys::remove_all(dir);
}

// The check itself, on one rank: each group refuses the other's tensors, naming the collective, the group
// and the caller; the stand-in computes as the CPU does.
TEST(GroupRoutingCheck, EachGroupRefusesTheOthersTensors) {
  const c10::Device device = testing::standInDevice();
  distributed::RankGroups groups = distributed::soloGroups();
  testing::checkRouting(groups, device);
  torch::Tensor onDevice = torch::ones({3}).to(device);
  torch::Tensor onHost = torch::ones({3});
  groups.device->allReduce(onDevice, distributed::ReduceOp::kSum, "gradients");
  groups.host->allReduce(onHost, distributed::ReduceOp::kSum, "flags");
  try {
    sendGradientsForTheRoutingTest(*groups.host, onDevice);
    ADD_FAILURE() << "the host group took a tensor on " << device;
  } catch (const testing::RoutingError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("all_reduce 'gradients on the wrong group' on the host group got a tensor on standin:0"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("issued by fs::trainer::sendGradientsForTheRoutingTest("), std::string::npos)
        << "no caller named: " << m;
  }
  torch::Tensor out = torch::empty({3});
  EXPECT_THROW(groups.device->allGather(out, onHost, "flags on the wrong group"), testing::RoutingError);
  EXPECT_EQ(static_cast<RoutingCheck&>(*groups.host).passed(), 1);
  EXPECT_EQ(static_cast<RoutingCheck&>(*groups.device).passed(), 1);
}

TEST(GroupRoutingCheck, TheStandInComputesAsTheCpu) {
  const c10::Device device = testing::standInDevice();
  const torch::Tensor a = torch::arange(20, torch::kFloat).reshape({4, 5}).sin();
  const torch::Tensor b = torch::arange(15, torch::kFloat).reshape({5, 3}).cos();
  torch::Tensor x = a.to(device), y = b.to(device);
  torch::Tensor z = torch::matmul(x, y).relu();
  EXPECT_EQ(z.device(), device);
  EXPECT_TRUE(torch::equal(z.cpu(), torch::matmul(a, b).relu()));
  // Views share the stand-in's memory; in-place ops write through them.
  torch::Tensor row = x.narrow(0, 1, 1);
  row.mul_(2);
  EXPECT_EQ(row.device(), device);
  EXPECT_EQ(x.cpu()[1][0].item<float>(), 2 * a[1][0].item<float>());
  // Factories with a stand-in tensor's options, and autograd.
  torch::Tensor w = torch::zeros({5}, x.options()).requires_grad_(true);
  EXPECT_EQ(w.device(), device);
  (x.matmul(w) + 1).sum().backward();
  EXPECT_EQ(w.grad().device(), device);
  EXPECT_TRUE(torch::allclose(w.grad().cpu(), x.cpu().sum(0)));
  // An op that takes both devices' tensors runs (structured ops refuse, as on a GPU) and is listed.
  EXPECT_EQ(x.index_select(0, torch::tensor({0, 2})).device(), device);
  const auto mixed = testing::mixedOps();
  EXPECT_NE(std::find(mixed.begin(), mixed.end(), "aten::index_select (inputs on standin:0 and cpu)"),
            mixed.end());
  // What the CPU-only group sees.
  const torch::Tensor host = testing::hostViewOf(x);
  EXPECT_TRUE(host.device().is_cpu());
  EXPECT_EQ(host.data_ptr(), x.data_ptr());
}

}  // namespace
}  // namespace fs::trainer
