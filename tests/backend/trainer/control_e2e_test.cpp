// A real flamingo-train process controlled as the GUI will: control files in
// the run directory (pause, resume, checkpoint, stop) and signals (SIGTERM).
// Waits are on events in events.jsonl, never on wall-clock thresholds; the
// generous deadline only turns a hang into a failure.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "backend/protocol/wire/control_file.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_manifest.h"
#include "tests/backend/trainer/engine_process.h"

namespace {

namespace fsys = std::filesystem;
using namespace fs::protocol;

using Process = fs::trainer::test::EngineProcess;
using fs::trainer::test::isAck;

std::vector<Event> readEvents(const fsys::path& dir) {
  return fs::trainer::test::readEvents(dir, /*finished=*/false);
}

Event waitFor(const fsys::path& dir, const std::function<bool(const Event&)>& pred, const char* what) {
  return fs::trainer::test::waitForEvent(dir, pred, what);
}

class ControlE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fsys::temp_directory_path() / ("fs_control_" + std::to_string(::getpid()) + "_" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fsys::remove_all(dir_);
  }
  void TearDown() override { fsys::remove_all(dir_); }

  Process start() {
    // Long enough that it cannot finish while the test drives it.
    return Process({std::string(FS_BINARY_DIR) + "/bin/flamingo-train", "demo", "--run-dir", dir_.string(),
                    "--set", "optim.epochs=100000"});
  }
  fsys::path dir_;
};

TEST_F(ControlE2e, PauseCheckpointResumeStop) {
  Process p = start();
  waitFor(
      dir_, [](const Event& e) { return std::holds_alternative<StepEvent>(e.body); }, "the first step");

  auto pause = issueControl(dir_, ControlVerb::kPause);
  ASSERT_TRUE(pause.isOk()) << pause.status().message();
  Event ack = waitFor(
      dir_, [&](const Event& e) { return isAck(e, pause->seq); }, "the pause ack");
  EXPECT_TRUE(std::get<ControlAckEvent>(ack.body).ok);
  auto manifest = readManifest(dir_);
  ASSERT_TRUE(manifest.isOk());
  EXPECT_EQ(manifest->state, RunState::kPaused);

  auto checkpoint = issueControl(dir_, ControlVerb::kCheckpoint);
  ASSERT_TRUE(checkpoint.isOk());
  ack = waitFor(
      dir_, [&](const Event& e) { return isAck(e, checkpoint->seq); }, "the checkpoint ack");
  EXPECT_TRUE(std::get<ControlAckEvent>(ack.body).ok) << std::get<ControlAckEvent>(ack.body).message;
  // While paused no step runs: the checkpoint's step is the pause step.
  const int64_t pausedAt = std::get<ControlAckEvent>(ack.body).step;

  auto resume = issueControl(dir_, ControlVerb::kResume);
  ASSERT_TRUE(resume.isOk());
  waitFor(
      dir_, [&](const Event& e) { return isAck(e, resume->seq); }, "the resume ack");
  waitFor(
      dir_,
      [&](const Event& e) {
        const auto* s = std::get_if<StepEvent>(&e.body);
        return s && s->step > pausedAt;
      },
      "a step after resuming");

  auto stop = issueControl(dir_, ControlVerb::kStop);
  ASSERT_TRUE(stop.isOk());
  EXPECT_EQ(p.waitExit(), 0);
  const auto events = readEvents(dir_);
  bool acked = false, finished = false, stepCheckpoint = false;
  for (const auto& e : events) {
    acked |= isAck(e, stop->seq);
    if (const auto* f = std::get_if<RunFinishedEvent>(&e.body))
      finished = f->status == FinishStatus::kStopped;
    if (const auto* c = std::get_if<CheckpointEvent>(&e.body))
      stepCheckpoint |= c->kind == CheckpointKind::kStep;
  }
  EXPECT_TRUE(acked && finished && stepCheckpoint);
  EXPECT_TRUE(fsys::is_empty(dir_ / "control" / "done") == false);
}

TEST_F(ControlE2e, SigtermStopsGracefullyWithACheckpoint) {
  Process p = start();
  waitFor(
      dir_, [](const Event& e) { return std::holds_alternative<StepEvent>(e.body); }, "the first step");
  ASSERT_EQ(::kill(p.pid(), SIGTERM), 0);
  EXPECT_EQ(p.waitExit(), 0);
  bool checkpoint = false, stopped = false;
  for (const auto& e : readEvents(dir_)) {
    checkpoint |= std::holds_alternative<CheckpointEvent>(e.body);
    if (const auto* f = std::get_if<RunFinishedEvent>(&e.body)) stopped = f->status == FinishStatus::kStopped;
  }
  EXPECT_TRUE(checkpoint);
  EXPECT_TRUE(stopped);
  auto m = readManifest(dir_);
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(m->state, RunState::kFinished);
}

TEST_F(ControlE2e, KillVerbExitsWithoutCheckpoint) {
  Process p = start();
  waitFor(
      dir_, [](const Event& e) { return std::holds_alternative<StepEvent>(e.body); }, "the first step");
  auto kill = issueControl(dir_, ControlVerb::kKill);
  ASSERT_TRUE(kill.isOk());
  EXPECT_EQ(p.waitExit(), 1);
  for (const auto& e : readEvents(dir_)) {
    const auto* c = std::get_if<CheckpointEvent>(&e.body);
    EXPECT_TRUE(c == nullptr || c->kind != CheckpointKind::kStep || c->step % 8 == 0)
        << "kill must not write a checkpoint of its own";
  }
}

}  // namespace

namespace {

TEST_F(ControlE2e, StopWithoutCheckpointWhenAsked) {
  Process p = start();
  waitFor(
      dir_, [](const Event& e) { return std::holds_alternative<StepEvent>(e.body); }, "the first step");
  auto stop = issueControl(dir_, ControlVerb::kStop, nlohmann::json{{"checkpoint", false}});
  ASSERT_TRUE(stop.isOk());
  EXPECT_EQ(p.waitExit(), 0);
  bool finished = false;
  for (const auto& e : readEvents(dir_)) {
    if (const auto* f = std::get_if<RunFinishedEvent>(&e.body))
      finished = f->status == FinishStatus::kStopped;
    if (const auto* c = std::get_if<CheckpointEvent>(&e.body)) {
      EXPECT_EQ(c->step % 8, 0) << "only the periodic checkpoints (every 8 steps) may exist";
    }
  }
  EXPECT_TRUE(finished);
}

}  // namespace

namespace {

// Writes control/<seq>-<verb>.json issued, and last modified, a minute ago: older
// than any attempt the test starts afterwards.
ControlCommand writeBackdated(const fsys::path& dir, ControlVerb verb) {
  const std::int64_t past = unixMillisNow() - 60'000;
  auto c = issueControl(dir, verb, nlohmann::json::object(), "test", past);
  EXPECT_TRUE(c.isOk()) << c.status().message();
  if (!c.isOk()) return {};
  for (const auto& entry : fsys::directory_iterator(dir / "control")) {
    if (entry.is_regular_file())
      fsys::last_write_time(entry.path(), fsys::file_time_type::clock::now() - std::chrono::minutes(1));
  }
  return *c;
}

// A pause written before the engine's first attempt began (a launcher's client
// pausing right after launch) is acted on: no earlier attempt can have left it.
TEST_F(ControlE2e, CommandIssuedBeforeTheFirstAttemptIsActedOn) {
  ASSERT_TRUE(RunDir(dir_).create().isOk());
  const ControlCommand pause = writeBackdated(dir_, ControlVerb::kPause);
  Process p = start();
  Event ack = waitFor(
      dir_, [&](const Event& e) { return isAck(e, pause.seq); }, "the pause ack");
  EXPECT_TRUE(std::get<ControlAckEvent>(ack.body).ok) << std::get<ControlAckEvent>(ack.body).message;
  auto stop = issueControl(dir_, ControlVerb::kStop, nlohmann::json{{"checkpoint", false}});
  ASSERT_TRUE(stop.isOk());
  EXPECT_EQ(p.waitExit(), 0);
}

// A later attempt (events.jsonl holds the first one's) still refuses what an
// earlier attempt left behind.
TEST_F(ControlE2e, CommandLeftBeforeALaterAttemptIsRefused) {
  {
    Process first = start();
    waitFor(
        dir_, [](const Event& e) { return std::holds_alternative<StepEvent>(e.body); }, "the first step");
    auto stop = issueControl(dir_, ControlVerb::kStop);
    ASSERT_TRUE(stop.isOk());
    ASSERT_EQ(first.waitExit(), 0);
  }
  const ControlCommand pause = writeBackdated(dir_, ControlVerb::kPause);
  Process second = start();
  Event ack = waitFor(
      dir_, [&](const Event& e) { return isAck(e, pause.seq); }, "the stale pause's ack");
  EXPECT_FALSE(std::get<ControlAckEvent>(ack.body).ok);
  EXPECT_EQ(std::get<ControlAckEvent>(ack.body).message, "issued before this attempt started");
  auto stop = issueControl(dir_, ControlVerb::kStop, nlohmann::json{{"checkpoint", false}});
  ASSERT_TRUE(stop.isOk());
  EXPECT_EQ(second.waitExit(), 0);
}

}  // namespace
