// launch.max_restarts end to end on this machine: `flamingo-train launch --max-restarts`
// with two real `flamingo-train train` ranks (Gloo on CPU, the tiny config), rank 1
// killed with -9 once a step checkpoint is complete. Once: the agent starts both ranks
// again, they resume from the newest checkpoint and the run's losses equal, bit for bit,
// those of an uninterrupted run; events.jsonl continues with gap-free seqs; run.json
// records both attempts. Twice with one restart allowed: the run fails naming the limit.
// Every wait is on a condition (an event in a file, an exit) with a generous bound.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "backend/protocol/wire/agent_events.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/protocol/wire/run_manifest.h"
#include "tests/backend/distributed/rank_processes.h"
#include "tests/backend/protocol/test_util.h"
#include "tests/backend/trainer/engine_test_util.h"

namespace fs::integration {
namespace {

using fs::testing::RankExit;

const std::string kTrain = std::string(FS_BINARY_DIR) + "/bin/flamingo-train";

using fs::test::readFile;

std::vector<protocol::AgentEvent> agentEvents(const std::filesystem::path& dir) {
  return protocol::decodeAgentEvents(readFile(dir / protocol::agentEventsFileName("n0"))).events;
}

// Polls `condition` (a file's content) every 50 ms for at most ~5 min: a hang guard, never a threshold.
bool waitFor(const std::function<bool()>& condition) {
  for (int i = 0; i < 6000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The pids rank `rank` had, attempt by attempt (the agent's spawned records).
std::vector<std::int64_t> pidsOfRank(const std::filesystem::path& dir, int rank) {
  std::vector<std::int64_t> out;
  for (const auto& e : agentEvents(dir)) {
    if (const auto* s = std::get_if<protocol::RankSpawnedEvent>(&e.body); s && s->rank == rank)
      out.push_back(s->pid);
  }
  return out;
}

bool hasStepCheckpoint(const std::filesystem::path& dir) {
  for (const auto& e : trainer::test::readEvents(dir, false)) {
    if (const auto* c = std::get_if<protocol::CheckpointEvent>(&e.body);
        c && c->kind == protocol::CheckpointKind::kStep)
      return true;
  }
  return false;
}

// Step events after the `attempt`-th run_started (0-based), in order.
std::vector<protocol::Event> stepsOfAttempt(const std::vector<protocol::Event>& events, int attempt) {
  std::vector<protocol::Event> out;
  int started = -1;
  for (const auto& e : events) {
    started += std::holds_alternative<protocol::RunStartedEvent>(e.body);
    if (started == attempt && std::holds_alternative<protocol::StepEvent>(e.body)) out.push_back(e);
  }
  return out;
}

class RestartRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("fs-restart-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    // 24 steps of 8 LAION and 4 MMC4 samples over 2 ranks; a step checkpoint every 4 steps.
    config_ = root_ / "run.yaml";
    ASSERT_TRUE(protocol::saveConfigFile(
                    trainer::test::tinyConfig(
                        {"model.lm.family=llama", "optim.epochs=1", "data.datasets[0].batch_size=4",
                         "data.datasets[0].samples_per_epoch=192", "data.datasets[1].batch_size=2",
                         "data.datasets[1].samples_per_epoch=96", "launch.threads_per_rank=1",
                         "checkpoint.every_steps=4", "telemetry.interval_steps=1",
                         "parallel.collective_timeout_s=60", "parallel.preflight_timeout_s=60"}),
                    config_.string())
                    .isOk());
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(root_);
  }

  pid_t start(const std::filesystem::path& runDir, int maxRestarts) {
    logs_.push_back(root_ / (runDir.filename().string() + ".out"));
    return fs::testing::spawnWithEnv(
        {kTrain, "launch", "--nproc-per-node", "2", "--master-port", std::to_string(fs::testing::freePort()),
         "--node-name", "n0", "--stop-grace-s", "60", "--max-restarts", std::to_string(maxRestarts),
         "--run-dir", runDir.string(), "--", "train", "--config", config_.string()},
        {{"OMP_NUM_THREADS", "1"}}, logs_.back());
  }
  RankExit wait(pid_t pid) {
    return fs::testing::waitAll({pid}, {logs_.back()}, std::chrono::seconds(900))[0];
  }

  // Waits for a complete step checkpoint, then kills rank 1 of the newest attempt; returns unix ms of the
  // kill.
  std::int64_t killRankOneAfterACheckpoint(const std::filesystem::path& dir, std::size_t attempt) {
    EXPECT_TRUE(waitFor([&] { return hasStepCheckpoint(dir); }));
    EXPECT_TRUE(waitFor([&] { return pidsOfRank(dir, 1).size() == attempt + 1; }));
    const auto pid = static_cast<pid_t>(pidsOfRank(dir, 1).at(attempt));
    const std::int64_t at = protocol::unixMillisNow();
    EXPECT_EQ(::kill(pid, SIGKILL), 0);
    return at;
  }

  std::filesystem::path root_, config_;
  std::vector<std::filesystem::path> logs_;
};

TEST_F(RestartRunTest, AKilledRankIsRestartedAndTheRunEqualsAnUninterruptedOne) {
  const auto reference = root_ / "reference";
  const RankExit ref = wait(start(reference, 0));
  ASSERT_EQ(ref.code, 0) << ref.output;
  std::map<std::int64_t, std::map<std::string, double>> expected;
  for (const auto& s : trainer::test::stepEvents(reference)) expected[s.step] = s.loss;
  ASSERT_EQ(expected.size(), 24u);

  const auto dir = root_ / "restarted";
  const pid_t agent = start(dir, 1);
  const std::int64_t killedAt = killRankOneAfterACheckpoint(dir, 0);
  const RankExit exit = wait(agent);
  ASSERT_EQ(exit.code, 0) << exit.output;

  // events.jsonl: every line whole, seqs gap-free across both attempts.
  const auto events = trainer::test::readEvents(dir, true);
  for (std::size_t i = 0; i < events.size(); ++i) ASSERT_EQ(events[i].seq, i) << "line " << i + 1;
  // The second attempt resumed from a step checkpoint of the first, not from the start.
  const auto second = stepsOfAttempt(events, 1);
  ASSERT_FALSE(second.empty());
  const std::int64_t resumedAfter = std::get<protocol::StepEvent>(second.front().body).step - 1;
  EXPECT_GT(resumedAfter, 0);
  bool fromACheckpoint = false;
  for (const auto& e : events) {
    if (const auto* c = std::get_if<protocol::CheckpointEvent>(&e.body))
      fromACheckpoint |= c->step == resumedAfter;
  }
  EXPECT_TRUE(fromACheckpoint) << "resumed after step " << resumedAfter << ", which no checkpoint holds";
  // From the checkpoint on (and before it), the losses are the uninterrupted run's, bit for bit.
  std::map<std::int64_t, std::map<std::string, double>> got;
  for (const auto& e : events) {
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) got[s->step] = s->loss;
  }
  EXPECT_EQ(got, expected);
  for (const auto& e : second) {
    const auto& s = std::get<protocol::StepEvent>(e.body);
    EXPECT_EQ(s.loss, expected.at(s.step)) << "step " << s.step;
  }

  // The agent's record and run.json's attempts.
  const auto rank1 = pidsOfRank(dir, 1);
  ASSERT_EQ(rank1.size(), 2u);
  const std::string reason = "rank 1 (pid " + std::to_string(rank1[0]) + ") was killed by SIGKILL";
  std::vector<protocol::AgentRestartingEvent> restarting;
  std::int64_t detectedAt = 0;
  for (const auto& e : agentEvents(dir)) {
    if (const auto* r = std::get_if<protocol::AgentRestartingEvent>(&e.body)) restarting.push_back(*r);
    if (std::holds_alternative<protocol::AgentStoppingEvent>(e.body) && detectedAt == 0) detectedAt = e.t;
  }
  ASSERT_EQ(restarting.size(), 1u);
  EXPECT_EQ(restarting[0], (protocol::AgentRestartingEvent{1, 1, reason, 1}));
  auto manifest = protocol::readManifest(dir);
  ASSERT_TRUE(manifest.isOk()) << manifest.status().message();
  ASSERT_EQ(manifest->attempts.size(), 2u);
  EXPECT_EQ(manifest->attempts[0].reason, "start");
  EXPECT_EQ(manifest->attempts[0].restart, 0);
  EXPECT_EQ(manifest->attempts[1].attempt, 1);
  EXPECT_EQ(manifest->attempts[1].reason, reason);
  EXPECT_EQ(manifest->attempts[1].restart, 1);
  EXPECT_EQ(manifest->attempts[1].max_restarts, 1);
  EXPECT_EQ(manifest->state, protocol::RunState::kFinished);

  // docs/benchmarks.md "Restart after a failure": printed, never asserted.
  std::printf("restart: detection (kill -> agent's stopping event): %.3f s\n",
              (detectedAt - killedAt) / 1000.0);
  std::printf("restart: recovery (kill -> first step of the new attempt): %.3f s\n",
              (second.front().t - killedAt) / 1000.0);
  std::printf("restart: resumed after step %lld\n", static_cast<long long>(resumedAfter));
}

TEST_F(RestartRunTest, KilledAgainAfterTheLastRestartTheRunFailsNamingTheLimit) {
  const auto dir = root_ / "twice";
  const pid_t agent = start(dir, 1);
  killRankOneAfterACheckpoint(dir, 0);
  // The second attempt is training: one of its steps is in the file.
  ASSERT_TRUE(waitFor([&] { return !stepsOfAttempt(trainer::test::readEvents(dir, false), 1).empty(); }));
  killRankOneAfterACheckpoint(dir, 1);
  const RankExit exit = wait(agent);
  EXPECT_EQ(exit.code, 1) << exit.output;
  const auto rank1 = pidsOfRank(dir, 1);
  ASSERT_EQ(rank1.size(), 2u);
  const std::string message =
      "rank 1 failed again after 1 restart (--max-restarts / launch.max_restarts: 1): rank 1 (pid " +
      std::to_string(rank1[1]) + ") was killed by SIGKILL";
  EXPECT_NE(exit.output.find("flamingo-train launch: " + message), std::string::npos) << exit.output;
  const auto events = agentEvents(dir);
  ASSERT_FALSE(events.empty());
  const auto* finished = std::get_if<protocol::AgentFinishedEvent>(&events.back().body);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->exit_code, 1);
  EXPECT_EQ(finished->reason, message);
}

}  // namespace
}  // namespace fs::integration
