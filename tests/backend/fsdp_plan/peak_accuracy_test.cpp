// The planner's peak per rank against real rank processes (issue 8, item 8:
// within 10 % of the measured peak, never more than 5 % under). Each case runs
// build/bin/fsdp_peak_probe ranks (one `flamingo-train train` rank each,
// torchrun's variables, 3 steps of the tiny preset on the planner's worst-case
// batches) and compares the largest per-step peak of tracked tensor bytes on
// every rank from step 2 on (NOTE [Measured peak per rank] in
// bench/fsdp/peak_probe.cpp) with makePlan's per_rank peak for the run's own
// config.yaml. CPU memory figures are deterministic for a config, so the
// bounds are exact checks, not statistics (docs/benchmarks.md has the whole
// matrix). The cases are those the planner once missed: full_shard without
// checkpointing, whose activations and gathered window peak at different
// moments (+17 % on 2 ranks and +19 % on 4 before NOTE [Step walk]), and
// shard_grad_op with checkpointing, which held units its forward had freed
// (+13 %). single and ddp (parallel.mode ddp) since issue 25: the memory
// event read 0 B of parameters and the Estimate tab compared no_shard.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "backend/fsdp_plan/plan.h"
#include "backend/protocol/config/config_yaml.h"
#include "tests/backend/distributed/rank_processes.h"

namespace fs::fsdp_plan {
namespace {

struct Case {
  int world;
  std::string strategy, policy;
  bool checkpointing;
};

class PeakAccuracyTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fs-peak-accuracy-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
};

// The "peak" figure of a probe line ({"rank":..,"step":..,"peak":..,...}).
int64_t field(const std::string& line, const std::string& key) {
  const auto at = line.find("\"" + key + "\":");
  return at == std::string::npos ? -1 : std::stoll(line.substr(at + key.size() + 3));
}

TEST_P(PeakAccuracyTest, PlannedPeakWithinTargetOfMeasured) {
  const Case c = GetParam();
  const int world = c.world;
  // single and ddp are parallel.mode ddp (NOTE [Replicated modes] in memory_estimate.h).
  const bool replicated = isReplicated(strategyFromName(c.strategy, "strategy").value());
  std::vector<std::string> sets = {
      "data.source=synthetic",
      "launch.threads_per_rank=1",
      replicated ? "parallel.mode=ddp" : "parallel.mode=fsdp",
      "launch.nproc_per_node=" + std::to_string(world),
      "optim.epochs=1",
      "checkpoint.every_steps=0",
      "data.datasets[0].samples_per_epoch=" + std::to_string(4 * world * 3),
      "data.datasets[1].samples_per_epoch=" + std::to_string(2 * world * 3),
      "parallel.wrap_policy=" + c.policy,
      std::string("model.gradient_checkpointing=") + (c.checkpointing ? "true" : "false")};
  if (!replicated) sets.push_back("parallel.sharding_strategy=" + c.strategy);
  const int port = fs::testing::freePort();
  std::vector<pid_t> pids;
  std::vector<std::filesystem::path> logs;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> argv = {std::string(FS_BINARY_DIR) + "/bin/fsdp_peak_probe",
                                     "--config",
                                     std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml",
                                     "--run-dir",
                                     (dir_ / "run").string(),
                                     "--out",
                                     (dir_ / ("peak." + std::to_string(r) + ".jsonl")).string(),
                                     "--full-batches"};
    for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
    std::map<std::string, std::string> env = {{"OMP_NUM_THREADS", "1"}};
    if (world > 1) {
      env.insert({{"RANK", std::to_string(r)},
                  {"WORLD_SIZE", std::to_string(world)},
                  {"LOCAL_RANK", std::to_string(r)},
                  {"LOCAL_WORLD_SIZE", std::to_string(world)},
                  {"MASTER_ADDR", "127.0.0.1"},
                  {"MASTER_PORT", std::to_string(port)}});
    }
    logs.push_back(dir_ / ("rank" + std::to_string(r) + ".out"));
    pids.push_back(fs::testing::spawnWithEnv(argv, env, logs.back()));
  }
  const auto exits = fs::testing::waitAll(pids, logs, std::chrono::seconds(120));
  for (int r = 0; r < world; ++r) ASSERT_EQ(exits[r].code, 0) << "rank " << r << ":\n" << exits[r].output;

  auto load = protocol::loadConfigFile((dir_ / "run" / "config.yaml").string());
  ASSERT_TRUE(load.ok()) << protocol::formatProblems(load.problems);
  PlanRequest req;
  req.config = load.config;
  req.topology = {world, 1};
  req.strategies = {strategyFromName(c.strategy, "strategy").value()};
  req.policies = {c.policy};
  req.reference = false;
  auto plan = makePlan(req);
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  ASSERT_EQ(plan->entries.size(), 1u);
  const int64_t planned = plan->entries[0].memory.peak();

  for (int r = 0; r < world; ++r) {
    std::ifstream in(dir_ / ("peak." + std::to_string(r) + ".jsonl"));
    std::string line;
    int64_t measured = 0;
    int steps = 0;
    while (std::getline(in, line)) {
      if (field(line, "step") < 2) continue;  // step 1 holds the set-up
      measured = std::max(measured, field(line, "peak"));
      ++steps;
    }
    ASSERT_EQ(steps, 2) << "rank " << r;
    const double error = static_cast<double>(planned) / static_cast<double>(measured) - 1.0;
    EXPECT_LE(error, 0.10) << "rank " << r << ": planned " << planned << " vs measured " << measured;
    EXPECT_GE(error, -0.05) << "rank " << r << ": planned " << planned << " vs measured " << measured;
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, PeakAccuracyTest,
                         ::testing::Values(Case{1, "full_shard", "openflamingo", false},
                                           Case{2, "full_shard", "openflamingo", false},
                                           Case{4, "full_shard", "openflamingo", false},
                                           Case{2, "full_shard", "transformer_layer", true},
                                           Case{2, "shard_grad_op", "transformer_layer", true},
                                           Case{1, "single", "openflamingo", false},
                                           Case{2, "ddp", "openflamingo", false},
                                           Case{2, "ddp", "openflamingo", true}),
                         [](const auto& info) {
                           const Case& c = info.param;
                           return c.strategy + "_" + c.policy + "_world" + std::to_string(c.world) +
                                  (c.checkpointing ? "_ckpt" : "");
                         });

}  // namespace
}  // namespace fs::fsdp_plan
