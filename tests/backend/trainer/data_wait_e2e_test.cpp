// A real flamingo-train process whose data goes quiet (NOTE [Waiting for
// data] in trainer.cpp, NOTE [Data stall] in shard_worker.h): the laion
// shard is a `pipe:` command that delivers a whole tar of 8 samples (two
// batches of the tiny preset) on its first pass and then prints nothing, so
// step 3 waits for data for ever. Control requests sent as the GUI sends them
// (control files) are answered during that wait, and with a small
// data.stall_timeout_s the run fails naming dataset, shard and command.
// The same with two ranks (`flamingo-train launch --nproc-per-node 2`):
// rank 1's shard commands go quiet after their first pass while rank 0's
// keep delivering, so rank 0 is ready while rank 1 waits.
// Waits are on events and files, never on wall-clock thresholds; the
// generous deadline only turns a hang into a failure.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "backend/data/shardgen/synthetic_shards.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/wire/control_file.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_manifest.h"
#include "tests/backend/distributed/rank_processes.h"
#include "tests/backend/trainer/engine_process.h"

namespace {

namespace fsys = std::filesystem;
using namespace fs::protocol;
using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = fs::trainer::test::kProcessDeadline;

using Process = fs::trainer::test::EngineProcess;
using fs::trainer::test::isAck;

std::vector<Event> readEvents(const fsys::path& dir) {
  return fs::trainer::test::readEvents(dir, /*finished=*/false);
}

Event waitFor(const fsys::path& dir, const std::function<bool(const Event&)>& pred, const char* what) {
  return fs::trainer::test::waitForEvent(dir, pred, what);
}

bool waitForFile(const fsys::path& file) {
  const auto deadline = Clock::now() + kDeadline;
  while (!fsys::exists(file)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

bool isStep(const Event& e, int64_t step) {
  const auto* s = std::get_if<StepEvent>(&e.body);
  return s && s->step == step;
}

class DataWaitE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fsys::temp_directory_path() / ("fs_data_wait_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fsys::remove_all(root_);
    fs::data::SyntheticShardOptions o;
    o.outDir = (root_ / "shards").string();
    o.laionShards = 2;           // one per rank with two ranks
    o.laionSamplesPerShard = 8;  // two laion batches of the tiny preset
    o.mmc4Shards = 2;
    o.mmc4DocsPerShard = 32;
    o.imageWidth = 64;
    o.imageHeight = 48;
    o.maxImagesPerDoc = 2;
    auto sum = fs::data::writeSyntheticShards(o);
    ASSERT_TRUE(sum) << sum.status().message();
    shards_ = sum.value();
    dir_ = root_ / "run";
    quiet_ = root_ / "quiet.since";
  }
  void TearDown() override { fsys::remove_all(root_); }

  // The first pass cats the shard; every later one touches quiet_ and sleeps.
  std::string quietPipe() const {
    const auto first = root_ / "first.done";
    const auto shard = root_ / "shards" / "laion-000000.tar";
    return "pipe:if [ -e '" + first.string() + "' ]; then touch '" + quiet_.string() +
           "'; exec sleep 1000; fi; touch '" + first.string() + "'; cat '" + shard.string() + "'";
  }

  Process start(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {std::string(FS_BINARY_DIR) + "/bin/flamingo-train",
                                     "train",
                                     "--config",
                                     std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml",
                                     "--run-dir",
                                     dir_.string(),
                                     "--set",
                                     "data.source=shards",
                                     "--set",
                                     "model.lm.tokenizer_path=" + shards_.tokenizerDir,
                                     "--set",
                                     "data.datasets.laion.shards=" + quietPipe(),
                                     "--set",
                                     "data.datasets.mmc4.shards=" + shards_.mmc4Shards,
                                     "--allow-pipe"};  // the shard command is this test's own
    for (const auto& s : extra) argv.insert(argv.end(), {"--set", s});
    return Process(argv);
  }

  // Two steps trained and the command went quiet: step 3 waits for data.
  void waitUntilStarved() {
    waitFor(
        dir_, [](const Event& e) { return isStep(e, 2); }, "step 2");
    ASSERT_TRUE(waitForFile(quiet_)) << "the shard command never went quiet";
  }

  // After a stop asked while waiting at step 3: the process exits 0, the stop is acknowledged,
  // the run finishes as stopped, and a step checkpoint of step 2 (the last completed) exists.
  void expectStoppedWithACheckpointOfStep2(Process& p, uint64_t stopSeq, const char* noExit) {
    const auto code = p.waitExit();
    ASSERT_TRUE(code.has_value()) << noExit;
    EXPECT_EQ(*code, 0);
    bool acked = false, stopped = false;
    std::optional<CheckpointEvent> checkpoint;
    for (const auto& e : readEvents(dir_)) {
      acked |= isAck(e, stopSeq) && std::get<ControlAckEvent>(e.body).ok;
      if (const auto* f = std::get_if<RunFinishedEvent>(&e.body))
        stopped = f->status == FinishStatus::kStopped;
      if (const auto* c = std::get_if<CheckpointEvent>(&e.body)) checkpoint = *c;
    }
    EXPECT_TRUE(acked);
    EXPECT_TRUE(stopped);
    ASSERT_TRUE(checkpoint.has_value()) << "no checkpoint before the exit";
    EXPECT_EQ(checkpoint->kind, CheckpointKind::kStep);
    EXPECT_EQ(checkpoint->step, 2);  // the last completed step
    ASSERT_TRUE(fsys::exists(dir_ / checkpoint->path)) << checkpoint->path;
  }

  // How a run ended on its stalled source: the error event's message, whether it finished as
  // failed, and the seconds from the command going quiet to the exit.
  struct StallFailure {
    std::string message;
    bool failed = false;
    double seconds = 0;
  };
  StallFailure waitForStallFailure(Process& p) {
    StallFailure out;
    if (!waitForFile(quiet_)) {
      ADD_FAILURE() << "the shard command never went quiet";
      return out;
    }
    const auto quietSince = Clock::now();
    const auto code = p.waitExit();
    out.seconds = std::chrono::duration<double>(Clock::now() - quietSince).count();
    if (!code) {
      ADD_FAILURE() << "the run did not fail on a silent data source";
      return out;
    }
    EXPECT_NE(*code, 0);
    for (const auto& e : readEvents(dir_)) {
      if (const auto* err = std::get_if<ErrorEvent>(&e.body)) out.message = err->message;
      if (const auto* f = std::get_if<RunFinishedEvent>(&e.body))
        out.failed = f->status == FinishStatus::kFailed;
    }
    EXPECT_TRUE(out.failed);
    return out;
  }

  fsys::path root_, dir_, quiet_;
  fs::data::SyntheticShardsSummary shards_;
};

TEST_F(DataWaitE2e, StopWhileWaitingForDataCheckpointsThenExits) {
  Process p = start();
  waitUntilStarved();
  auto stop = issueControl(dir_, ControlVerb::kStop);
  ASSERT_TRUE(stop.isOk()) << stop.status().message();
  expectStoppedWithACheckpointOfStep2(p, stop->seq,
                                      "flamingo-train did not exit on stop while waiting for data");
}

TEST_F(DataWaitE2e, PauseCheckpointResumeWhileWaitingForData) {
  Process p = start();
  waitUntilStarved();
  auto pause = issueControl(dir_, ControlVerb::kPause);
  ASSERT_TRUE(pause.isOk());
  Event ack = waitFor(
      dir_, [&](const Event& e) { return isAck(e, pause->seq); }, "the pause ack");
  EXPECT_TRUE(std::get<ControlAckEvent>(ack.body).ok);
  EXPECT_EQ(std::get<ControlAckEvent>(ack.body).message, "paused after step 2");
  auto manifest = readManifest(dir_);
  ASSERT_TRUE(manifest.isOk());
  EXPECT_EQ(manifest->state, RunState::kPaused);

  auto checkpoint = issueControl(dir_, ControlVerb::kCheckpoint);
  ASSERT_TRUE(checkpoint.isOk());
  ack = waitFor(
      dir_, [&](const Event& e) { return isAck(e, checkpoint->seq); }, "the checkpoint ack");
  EXPECT_TRUE(std::get<ControlAckEvent>(ack.body).ok) << std::get<ControlAckEvent>(ack.body).message;
  EXPECT_EQ(std::get<ControlAckEvent>(ack.body).step, 2);
  EXPECT_TRUE(fsys::exists(dir_ / "checkpoint_step2.pt"));

  auto resume = issueControl(dir_, ControlVerb::kResume);
  ASSERT_TRUE(resume.isOk());
  ack = waitFor(
      dir_, [&](const Event& e) { return isAck(e, resume->seq); }, "the resume ack");
  EXPECT_EQ(std::get<ControlAckEvent>(ack.body).message, "resumed");

  auto stop = issueControl(dir_, ControlVerb::kStop);
  ASSERT_TRUE(stop.isOk());
  const auto code = p.waitExit();
  ASSERT_TRUE(code.has_value()) << "flamingo-train did not exit on stop while waiting for data";
  EXPECT_EQ(*code, 0);
}

TEST_F(DataWaitE2e, SilentSourceFailsTheRunNamingDatasetShardAndCommand) {
  Process p = start({"data.stall_timeout_s=2"});
  const auto [message, failed, took] = waitForStallFailure(p);
  EXPECT_NE(message.find("dataset laion: data worker 0 of rank 0 delivered nothing for"), std::string::npos)
      << message;
  EXPECT_NE(message.find("(data.stall_timeout_s = 2)"), std::string::npos) << message;
  EXPECT_NE(message.find("shard 1 of 1, command 'if [ -e"), std::string::npos) << message;
  EXPECT_NE(message.find("pass 1"), std::string::npos) << message;
  std::printf(
      "detection: silent data source (flamingo-train): %.1f s from the command going quiet to the "
      "exit (data.stall_timeout_s 2 s here; default %lld s)\n",
      took, static_cast<long long>(defaultRunConfig().data.stall_timeout_s));
}

// Two ranks on one node through the node agent. Each rank reads one laion
// shard per pass; the shard command is source.sh, which on rank 1 ($RANK,
// set by the agent) delivers its first pass and then, on every later one,
// touches quiet_ and waits until the test creates flow_ (for ever when it
// never does). Rank 0's commands always deliver. So after step 2 rank 0's
// data is ready while rank 1's is not.
class DataWaitRanksE2e : public DataWaitE2e {
 protected:
  void SetUp() override {
    DataWaitE2e::SetUp();
    flow_ = root_ / "flow";
    std::ofstream(root_ / "source.sh")
        << "# $1: the shard. Rank 1 delivers its first pass, then waits for the flow file.\n"
        << "if [ \"$RANK\" = 1 ] && [ -e '" << (root_ / "served.1").string() << "' ]; then\n"
        << "  touch '" << quiet_.string() << "'\n"
        << "  while [ ! -e '" << flow_.string() << "' ]; do sleep 0.05; done\n"
        << "fi\n"
        << "touch '" << root_.string() << "/served.'\"$RANK\"\n"
        << "exec cat \"$1\"\n";
  }

  Process start(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {std::string(FS_BINARY_DIR) + "/bin/flamingo-train",
                                     "launch",
                                     "--nproc-per-node",
                                     "2",
                                     "--master-port",
                                     std::to_string(fs::testing::freePort()),
                                     "--run-dir",
                                     dir_.string(),
                                     "--",
                                     "train",
                                     "--config",
                                     std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml",
                                     "--allow-pipe"};  // the shard command is this test's own
    // One epoch of 8 steps; LLaMA-shaped (no dropout), so a resumed run matches an uninterrupted one.
    std::vector<std::string> sets = {"data.source=shards",
                                     "model.lm.tokenizer_path=" + shards_.tokenizerDir,
                                     "data.datasets.laion.shards=pipe:sh '" + (root_ / "source.sh").string() +
                                         "' '" + shards_.laionShards + "'",
                                     "data.datasets.mmc4.shards=" + shards_.mmc4Shards,
                                     "model.lm.family=llama",
                                     "optim.epochs=1",
                                     "checkpoint.every_steps=0",
                                     "launch.threads_per_rank=1",
                                     "parallel.collective_timeout_s=120"};
    sets.insert(sets.end(), extra.begin(), extra.end());
    for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
    return Process(argv);
  }

  // Every step event's losses by step.
  std::map<int64_t, std::map<std::string, double>> losses() const {
    std::map<int64_t, std::map<std::string, double>> out;
    for (const auto& e : readEvents(dir_)) {
      if (const auto* st = std::get_if<StepEvent>(&e.body)) out[st->step] = st->loss;
    }
    return out;
  }

  fsys::path flow_;
};

TEST_F(DataWaitRanksE2e, StopWhileARankWaitsCheckpointsAndTheResumeContinuesExactly) {
  // The uninterrupted run: the data flows from the start.
  std::ofstream(flow_).put('\n');
  std::map<int64_t, std::map<std::string, double>> reference;
  {
    Process p = start();
    const auto code = p.waitExit();
    ASSERT_TRUE(code.has_value()) << "the uninterrupted run did not finish";
    ASSERT_EQ(*code, 0);
    reference = losses();
    ASSERT_EQ(reference.size(), 8u);
  }
  fsys::remove_all(dir_);
  for (const auto& f : {flow_, quiet_, root_ / "served.0", root_ / "served.1"}) fsys::remove(f);

  Process p = start();
  waitUntilStarved();
  auto stop = issueControl(dir_, ControlVerb::kStop);
  ASSERT_TRUE(stop.isOk()) << stop.status().message();
  // The agent exits 0 only when every rank did.
  expectStoppedWithACheckpointOfStep2(p, stop->seq,
                                      "the ranks did not exit on stop while rank 1 waited for data");
  if (::testing::Test::HasFatalFailure()) return;
  EXPECT_EQ(losses().size(), 2u);

  // The data flows again; a second launch on the run directory resumes from the stop checkpoint.
  std::ofstream(flow_).put('\n');
  Process again = start();
  const auto resumed = again.waitExit();
  ASSERT_TRUE(resumed.has_value()) << "the resumed run did not finish";
  ASSERT_EQ(*resumed, 0);
  const auto after = losses();
  ASSERT_EQ(after.size(), reference.size());
  for (const auto& [step, loss] : reference) {
    ASSERT_TRUE(after.count(step)) << "step " << step;
    for (const auto& [name, l] : loss) {
      ASSERT_TRUE(after.at(step).count(name)) << "step " << step << " " << name;
      EXPECT_NEAR(after.at(step).at(name), l, 1e-6 * std::abs(l)) << "step " << step << " " << name;
    }
  }
}

TEST_F(DataWaitRanksE2e, PauseWhileARankWaitsThenResumeTrainsOnceTheDataFlows) {
  Process p = start();
  waitUntilStarved();
  auto pause = issueControl(dir_, ControlVerb::kPause);
  ASSERT_TRUE(pause.isOk());
  Event ack = waitFor(
      dir_, [&](const Event& e) { return isAck(e, pause->seq); }, "the pause ack");
  EXPECT_TRUE(std::get<ControlAckEvent>(ack.body).ok);
  EXPECT_EQ(std::get<ControlAckEvent>(ack.body).message, "paused after step 2");
  auto manifest = readManifest(dir_);
  ASSERT_TRUE(manifest.isOk());
  EXPECT_EQ(manifest->state, RunState::kPaused);

  std::ofstream(flow_).put('\n');  // the data comes while paused: nothing trains until resume
  auto resume = issueControl(dir_, ControlVerb::kResume);
  ASSERT_TRUE(resume.isOk());
  ack = waitFor(
      dir_, [&](const Event& e) { return isAck(e, resume->seq); }, "the resume ack");
  EXPECT_EQ(std::get<ControlAckEvent>(ack.body).message, "resumed");
  waitFor(
      dir_, [](const Event& e) { return isStep(e, 3); }, "step 3 after the resume");
  manifest = readManifest(dir_);
  ASSERT_TRUE(manifest.isOk());
  EXPECT_NE(manifest->state, RunState::kPaused);

  auto stop = issueControl(dir_, ControlVerb::kStop);
  ASSERT_TRUE(stop.isOk());
  const auto code = p.waitExit();
  ASSERT_TRUE(code.has_value()) << "the ranks did not exit on stop";
  EXPECT_EQ(*code, 0);
}

TEST_F(DataWaitRanksE2e, CheckpointWhileARankWaitsIsWritten) {
  Process p = start();
  waitUntilStarved();
  auto checkpoint = issueControl(dir_, ControlVerb::kCheckpoint);
  ASSERT_TRUE(checkpoint.isOk());
  Event ack = waitFor(
      dir_, [&](const Event& e) { return isAck(e, checkpoint->seq); }, "the checkpoint ack");
  EXPECT_TRUE(std::get<ControlAckEvent>(ack.body).ok) << std::get<ControlAckEvent>(ack.body).message;
  EXPECT_EQ(std::get<ControlAckEvent>(ack.body).step, 2);  // rank 1 cannot train step 3 before flow_ exists
  EXPECT_TRUE(fsys::exists(dir_ / "checkpoint_step2.pt"));

  // Still waiting, still answering: a stop ends the run.
  auto stop = issueControl(dir_, ControlVerb::kStop);
  ASSERT_TRUE(stop.isOk());
  const auto code = p.waitExit();
  ASSERT_TRUE(code.has_value()) << "the ranks did not exit on stop";
  EXPECT_EQ(*code, 0);
  EXPECT_EQ(losses().size(), 2u);
}

TEST_F(DataWaitRanksE2e, SilentSourceOnOneRankFailsTheRunNamingDatasetShardAndCommand) {
  Process p = start({"data.stall_timeout_s=2"});
  const auto [message, failed, took] = waitForStallFailure(p);
  // Rank 0 writes the events: rank 1's message reached it.
  EXPECT_NE(message.find("dataset laion: data worker 0 of rank 1 delivered nothing for"), std::string::npos)
      << message;
  EXPECT_NE(message.find("(data.stall_timeout_s = 2)"), std::string::npos) << message;
  EXPECT_NE(message.find(" of 2, command 'sh '"), std::string::npos) << message;
  EXPECT_NE(message.find("pass 1"), std::string::npos) << message;
  std::printf(
      "detection: silent data source on rank 1 of 2 (flamingo-train launch): %.1f s from the command "
      "going quiet to the agent's exit (data.stall_timeout_s 2 s here; default %lld s)\n",
      took, static_cast<long long>(defaultRunConfig().data.stall_timeout_s));
}

}  // namespace
