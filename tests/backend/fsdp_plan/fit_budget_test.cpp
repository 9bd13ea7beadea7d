// The fit (backend/fsdp_plan/fit.h) against measured peaks: with a memory
// budget just above and just below each choice's measured peak, the fit ranks
// only choices whose measured peak is within the budget, and refuses when no
// measured peak is. Measured as peak_accuracy_test does: build/bin/
// fsdp_peak_probe ranks (2 ranks of the tiny preset, 3 steps on the planner's
// worst-case batches), the largest per-step peak of tracked tensor bytes from
// step 2 on, on either rank. The fit runs in CPU mode (the planned peak), with
// its default 5 % headroom. CPU memory figures are deterministic for a
// config, so these are exact checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "backend/fsdp_plan/fit.h"
#include "tests/backend/distributed/rank_processes.h"
#include "tests/backend/fsdp_plan/plan_test_util.h"

namespace fs::fsdp_plan {
namespace {

constexpr int kWorld = 2;

int64_t field(const std::string& line, const std::string& key) {
  const auto at = line.find("\"" + key + "\":");
  return at == std::string::npos ? -1 : std::stoll(line.substr(at + key.size() + 3));
}

std::vector<std::string> baseSets() {
  return {"data.source=synthetic",
          "launch.threads_per_rank=1",
          "launch.nproc_per_node=" + std::to_string(kWorld),
          "optim.epochs=1",
          "checkpoint.every_steps=0",
          "data.datasets[0].samples_per_epoch=" + std::to_string(4 * kWorld * 3),
          "data.datasets[1].samples_per_epoch=" + std::to_string(2 * kWorld * 3)};
}

// The largest peak over both ranks from step 2 on, of one run of `sets`; -1 on failure (reported).
int64_t measurePeak(const std::filesystem::path& dir, const std::vector<std::string>& sets) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const int port = fs::testing::freePort();
  std::vector<pid_t> pids;
  std::vector<std::filesystem::path> logs;
  for (int r = 0; r < kWorld; ++r) {
    std::vector<std::string> argv = {std::string(FS_BINARY_DIR) + "/bin/fsdp_peak_probe",
                                     "--config",
                                     std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml",
                                     "--run-dir",
                                     (dir / "run").string(),
                                     "--out",
                                     (dir / ("peak." + std::to_string(r) + ".jsonl")).string(),
                                     "--full-batches"};
    for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
    const std::map<std::string, std::string> env = {{"OMP_NUM_THREADS", "1"},
                                                    {"RANK", std::to_string(r)},
                                                    {"WORLD_SIZE", std::to_string(kWorld)},
                                                    {"LOCAL_RANK", std::to_string(r)},
                                                    {"LOCAL_WORLD_SIZE", std::to_string(kWorld)},
                                                    {"MASTER_ADDR", "127.0.0.1"},
                                                    {"MASTER_PORT", std::to_string(port)}};
    logs.push_back(dir / ("rank" + std::to_string(r) + ".out"));
    pids.push_back(fs::testing::spawnWithEnv(argv, env, logs.back()));
  }
  const auto exits = fs::testing::waitAll(pids, logs, std::chrono::seconds(120));
  int64_t measured = 0;
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(exits[r].code, 0) << "rank " << r << ":\n" << exits[r].output;
    if (exits[r].code != 0) return -1;
    std::ifstream in(dir / ("peak." + std::to_string(r) + ".jsonl"));
    std::string line;
    while (std::getline(in, line))
      if (field(line, "step") >= 2) measured = std::max(measured, field(line, "peak"));
  }
  return measured;
}

std::string key(const FitChoice& c) {
  return c.label();
}

TEST(FitBudgetTest, PicksOnlyChoicesWhoseMeasuredPeakIsWithinTheBudget) {
  const auto dir = std::filesystem::temp_directory_path() / ("fs-fit-budget-" + std::to_string(::getpid()));
  FitRequest req;
  req.config = test::preset("tiny", baseSets());
  req.cluster.nodes = 1;
  req.cluster.gpusPerNode = kWorld;
  req.cluster.memoryPerGpu = int64_t{64} << 30;
  req.cluster.hostMemoryPerNode = int64_t{64} << 30;
  req.cluster.intraNodeGBs = req.cluster.hostGBs = 2;
  req.cluster.peakTflopsFp32 = req.cluster.peakTflops16 = 0.01;
  req.device = PlanDevice::kCpu;
  req.strategies = {"full_shard", "ddp"};
  req.policies = {"transformer_layer"};
  req.precisions = {"fp32"};
  auto roomy = fitToCluster(req);
  ASSERT_TRUE(roomy.isOk()) << roomy.status().message();
  ASSERT_GE(roomy->ranked.size(), 6u);  // 2 strategies x 2 splits x checkpointing off / on

  std::map<std::string, int64_t> measured;
  for (const auto& c : roomy->ranked) {
    std::vector<std::string> sets = baseSets();
    for (const auto& a : c.assignments(req.config, req.cluster)) sets.push_back(a);
    const int64_t peak = measurePeak(dir, sets);
    ASSERT_GT(peak, 0) << c.label();
    measured[key(c)] = peak;
    std::cout << c.label() << ": planned " << c.deviceBytes << " measured " << peak << "\n";
  }
  std::vector<int64_t> peaks;
  for (const auto& [k, v] : measured) peaks.push_back(v);
  std::sort(peaks.begin(), peaks.end());

  size_t picked = 0;
  for (const int64_t peak : peaks) {
    for (const int64_t budget : {peak - 1, peak + 1, peak + peak / 10}) {
      req.cluster.memoryPerGpu = budget;
      auto fit = fitToCluster(req);
      ASSERT_TRUE(fit.isOk()) << fit.status().message();
      for (const auto& c : fit->ranked) {
        ASSERT_EQ(measured.count(key(c)), 1u) << c.label();
        EXPECT_LE(measured[key(c)], budget) << c.label() << " picked under a budget of " << budget;
      }
      picked += fit->ranked.size();
    }
  }
  EXPECT_GT(picked, 0u);  // some budget just above a measured peak picks a choice

  // Just below the smallest measured peak: nothing fits, and the fit says so.
  req.cluster.memoryPerGpu = peaks.front() - 1;
  auto none = fitToCluster(req);
  ASSERT_TRUE(none.isOk());
  EXPECT_TRUE(none->ranked.empty());
  EXPECT_NE(noFitMessage(*none).find("nothing fits"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fs::fsdp_plan
