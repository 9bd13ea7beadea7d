// A disk that fills up (issue 26 item 3): real flamingo-train processes with
// their run directory on a small real tmpfs (NOTE [A private tmpfs] in
// private_tmpfs.h), filled once by a checkpoint that does not fit and once by
// events.jsonl. Each run stops with a non-zero exit and an error naming the
// file and "No space left on device"; the previous checkpoint reads and its
// tensor hashes verify; nothing of the failed write is left behind (no
// temporary file, no .partial directory) and events.jsonl ends on a whole
// line; and once there is room again (a bigger remount) the run resumes from
// that checkpoint with the losses of an uninterrupted run.
//
// Sizes are measured, never guessed: the checkpoint case first trains in a
// normal directory and sizes the tmpfs so the first checkpoint fits and the
// second cannot (room for one and a half); the telemetry case shrinks the
// tmpfs to what is used plus 256 KiB right after its only checkpoint.
// Without CAP_SYS_ADMIN the tests skip, and fail under CI=true
// (tests/fixtures/fixture_unavailable.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/checkpoint/checkpoint_manifest.h"
#include "backend/protocol/wire/control_file.h"
#include "backend/protocol/wire/run_manifest.h"
#include "tests/backend/trainer/checkpoint_checks.h"
#include "tests/backend/trainer/engine_process.h"
#include "tests/backend/trainer/engine_test_util.h"
#include "tests/backend/trainer/private_tmpfs.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::trainer {
namespace {

namespace fsys = std::filesystem;
using protocol::Event;
using test::newestIntact;
using test::stepLosses;

constexpr std::uint64_t kPage = 4096;
constexpr const char* kDiskFull = "No space left on device";

std::uint64_t pages(std::uint64_t bytes) {
  return (bytes + kPage - 1) / kPage * kPage;
}

// What the files under `path` (a file or a directory) take on a tmpfs: whole pages.
std::uint64_t pageBytes(const fsys::path& path) {
  if (fsys::is_regular_file(path)) return pages(fsys::file_size(path));
  std::uint64_t n = 0;
  for (const auto& e : fsys::recursive_directory_iterator(path))
    if (e.is_regular_file()) n += pages(e.file_size());
  return n;
}

std::string readText(const fsys::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The names starting with '.' in `dir`: what an interrupted write may leave.
std::vector<std::string> hiddenEntries(const fsys::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fsys::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(".")) out.push_back(name);
  }
  return out;
}

// The events from the `attempt`-th run_started on (0: the first attempt's), up to the next one.
std::vector<Event> attemptEvents(const std::vector<Event>& events, int attempt) {
  std::vector<Event> out;
  int seen = -1;
  for (const auto& e : events) {
    if (std::holds_alternative<protocol::RunStartedEvent>(e.body)) ++seen;
    if (seen == attempt) out.push_back(e);
  }
  return out;
}

// The line of `log` that flamingo-train's failure starts with.
std::string failureLine(const std::string& log) {
  const auto at = log.find("flamingo-train: ");
  return at == std::string::npos ? "(none)" : log.substr(at, log.find('\n', at) - at);
}

// `text` names `path` and says the device is full.
void expectFullDiskError(const std::string& text, const fsys::path& path, const char* where) {
  EXPECT_NE(text.find(path.string()), std::string::npos) << where << " does not name " << path << ":\n"
                                                         << text;
  EXPECT_NE(text.find(kDiskFull), std::string::npos) << where << " does not say the disk is full:\n" << text;
}

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fsys::temp_directory_path() / ("fs_disk_full_" + std::to_string(::getpid()));
    fsys::remove_all(root_);
    fsys::create_directories(root_);
  }
  void TearDown() override {
    tmpfs_.reset();  // unmounted before its mount point is removed
    std::error_code ec;
    if (!HasFailure()) fsys::remove_all(root_, ec);
  }

  // Mounts the small file system on root_/small; empty, or why it could not.
  std::string mountSmall(std::uint64_t bytes) {
    tmpfs_ = std::make_unique<test::PrivateTmpfs>();
    return tmpfs_->mount(root_ / "small", bytes);
  }

  // `flamingo-train train` on the tiny preset with synthetic data, one epoch, one thread.
  std::vector<std::string> trainArgv(const fsys::path& dir, const std::vector<std::string>& sets) const {
    std::vector<std::string> argv = {
        std::string(FS_BINARY_DIR) + "/bin/flamingo-train",          "train",     "--config",
        std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml", "--run-dir", dir.string()};
    for (const char* set : {"data.source=synthetic", "optim.epochs=1", "launch.threads_per_rank=1"}) {
      argv.push_back("--set");
      argv.push_back(set);
    }
    for (const auto& set : sets) {
      argv.push_back("--set");
      argv.push_back(set);
    }
    return argv;
  }
  int train(const fsys::path& dir, const std::vector<std::string>& sets, const fsys::path& log) {
    return test::EngineProcess(trainArgv(dir, sets), log).waitExit().value_or(-1);
  }

  // The checkpoint case for one checkpoint format (`sets`).
  void checkpointThatDoesNotFit(const std::vector<std::string>& formatSets);

  fsys::path root_;
  std::unique_ptr<test::PrivateTmpfs> tmpfs_;
};

// 8 steps, a step checkpoint every 3 steps, the last 2 kept: step 3 fits, step 6 does not. Then the
// space is freed (a bigger remount) and the same run directory resumes from step 3.
void DiskFullTest::checkpointThatDoesNotFit(const std::vector<std::string>& formatSets) {
  std::vector<std::string> sets = {"data.datasets[0].samples_per_epoch=32",
                                   "data.datasets[1].samples_per_epoch=16", "checkpoint.every_steps=3",
                                   "checkpoint.keep_last=2"};
  sets.insert(sets.end(), formatSets.begin(), formatSets.end());

  // The file system first, so a test that cannot have one skips at once; it is sized below.
  if (std::string why = mountSmall(1u << 20); !why.empty()) FS_FIXTURE_UNAVAILABLE(why);

  // The uninterrupted run in a normal directory: the losses, and the sizes on a tmpfs.
  const auto baselineDir = root_ / "baseline";
  ASSERT_EQ(train(baselineDir, sets, root_ / "baseline.log"), 0) << readText(root_ / "baseline.log");
  const auto baseline = stepLosses(test::readEvents(baselineDir, true));
  ASSERT_EQ(baseline.size(), 8u);
  const std::uint64_t checkpoint = pageBytes(baselineDir / "checkpoint_step3.pt");
  std::uint64_t others = 0;  // everything but checkpoints, at the end of the run: more than at step 6
  for (const auto& e : fsys::directory_iterator(baselineDir)) {
    if (!e.path().filename().string().starts_with("checkpoint_")) others += pageBytes(e.path());
  }
  // Room for one checkpoint and a half: the first fits beside the rest, a second never does.
  const std::uint64_t size = checkpoint + pages(checkpoint / 2);
  ASSERT_LT(others + 16 * kPage, checkpoint / 2)
      << "the checkpoint (" << checkpoint << " bytes) is too small beside the other files (" << others
      << " bytes) to size the file system deterministically";
  ASSERT_EQ(tmpfs_->resize(size), "");
  std::cout << "checkpoint " << checkpoint << " bytes, other files " << others << " bytes, tmpfs " << size
            << " bytes\n";

  const auto dir = root_ / "small" / "run";
  const auto log1 = root_ / "attempt1.log";
  EXPECT_EQ(train(dir, sets, log1), 1) << "the run must fail on the checkpoint that does not fit:\n"
                                       << readText(log1);
  const std::string stderr1 = readText(log1);
  const auto failedCheckpoint = dir / "checkpoint_step6.pt";
  // The error names the checkpoint (its file, or a file in its hidden .partial directory) and the full disk.
  expectFullDiskError(stderr1, dir, "stderr");
  EXPECT_NE(stderr1.find("checkpoint_step6.pt"), std::string::npos) << stderr1;
  std::cout << "stderr: " << failureLine(stderr1) << "\n";

  auto events = test::readEvents(dir, true);  // every line whole
  const std::string errors = test::errorMessages(events);
  expectFullDiskError(errors, dir, "the error event");
  EXPECT_NE(errors.find("checkpoint_step6.pt"), std::string::npos) << errors;
  auto manifest = protocol::readManifest(dir);
  ASSERT_TRUE(manifest.isOk()) << manifest.status().message();
  EXPECT_EQ(manifest->state, protocol::RunState::kFailed);

  // The previous checkpoint is intact; nothing of the failed one is left: no file under its name, no
  // temporary file, no .partial directory.
  EXPECT_FALSE(fsys::exists(failedCheckpoint));
  EXPECT_EQ(newestIntact(dir), 3);
  for (const auto& name : hiddenEntries(dir)) ADD_FAILURE() << "the failed write left " << name;

  // Room again: the same directory resumes from step 3.
  ASSERT_EQ(tmpfs_->resize(4 * checkpoint + 4 * others + (1u << 20)), "");
  const auto log2 = root_ / "attempt2.log";
  ASSERT_EQ(train(dir, sets, log2), 0) << readText(log2);
  events = test::readEvents(dir, true);
  const auto second = attemptEvents(events, 1);
  // The newest complete checkpoint was step 3's and it verified: none was passed over.
  for (const auto& e : second) {
    if (const auto* w = std::get_if<protocol::WarningEvent>(&e.body)) {
      EXPECT_NE(w->code, "checkpoint_skipped") << w->message;
    }
  }
  const auto resumed = stepLosses(second);
  ASSERT_FALSE(resumed.empty());
  EXPECT_EQ(resumed.begin()->first, 4) << "the second attempt resumes after step 3";
  for (const auto& [step, loss] : stepLosses(events)) EXPECT_EQ(loss, baseline.at(step)) << "step " << step;
  EXPECT_EQ(stepLosses(events).rbegin()->first, 8);
  EXPECT_EQ(newestIntact(dir), 8);
}

TEST_F(DiskFullTest, FullCheckpointThatDoesNotFitFailsAndKeepsThePreviousOne) {
  checkpointThatDoesNotFit({});
}

// Sharded (FSDP, one rank): the rank file of step 6's .partial directory does not fit.
TEST_F(DiskFullTest, ShardedCheckpointThatDoesNotFitFailsAndKeepsThePreviousOne) {
  checkpointThatDoesNotFit({"parallel.mode=fsdp", "checkpoint.format=sharded"});
}

// events.jsonl fills the disk after a checkpoint: the run stops (NOTE [Telemetry that cannot be
// written] in backend/trainer/trainer.cpp) naming events.jsonl, the file ends on a whole line, the
// checkpoint is intact, and with room again the run resumes from it.
TEST_F(DiskFullTest, EventsThatFillTheDiskStopTheRunNamingTheFile) {
  if (std::string why = mountSmall(256u << 20); !why.empty()) FS_FIXTURE_UNAVAILABLE(why);
  const auto dir = root_ / "small" / "run";
  // One long epoch and no periodic checkpoints: only the one asked for below.
  const std::vector<std::string> sets = {"data.datasets[0].samples_per_epoch=400000",
                                         "data.datasets[1].samples_per_epoch=200000",
                                         "checkpoint.every_steps=0"};
  const auto log1 = root_ / "attempt1.log";
  int64_t checkpointStep = 0;
  {
    test::EngineProcess run(trainArgv(dir, sets), log1);
    test::waitForEvent(
        dir, [](const Event& e) { return std::holds_alternative<protocol::StepEvent>(e.body); },
        "the first step");
    auto asked = protocol::issueControl(dir, protocol::ControlVerb::kCheckpoint);
    ASSERT_TRUE(asked.isOk()) << asked.status().message();
    const Event written = test::waitForEvent(
        dir, [](const Event& e) { return std::holds_alternative<protocol::CheckpointEvent>(e.body); },
        "the checkpoint");
    checkpointStep = std::get<protocol::CheckpointEvent>(written.body).step;
    ASSERT_GT(checkpointStep, 0);
    // From now on the events have 256 KiB left.
    const std::uint64_t used = tmpfs_->usedBytes();
    ASSERT_EQ(tmpfs_->resize(used + (256u << 10)), "");
    std::cout << "checkpoint at step " << checkpointStep << "; tmpfs shrunk to " << used << " + 256 KiB\n";
    EXPECT_EQ(run.waitExit().value_or(-1), 1) << "the run must stop once events.jsonl cannot be written:\n"
                                              << readText(log1);
  }
  const auto eventsFile = dir / "events.jsonl";
  const std::string stderr1 = readText(log1);
  expectFullDiskError(stderr1, eventsFile, "stderr");
  EXPECT_NE(stderr1.find("telemetry: cannot append to " + eventsFile.string()), std::string::npos) << stderr1;
  std::cout << "stderr: " << failureLine(stderr1) << "\n";

  auto events = test::readEvents(dir, true);  // whole lines only: a failed append was cut back
  const auto first = stepLosses(events);
  ASSERT_FALSE(first.empty());
  EXPECT_GT(first.rbegin()->first, checkpointStep + 1) << "steps ran on after the checkpoint";
  // The error event made it only if a line still fitted where the failed append was cut back.
  const std::string errors = test::errorMessages(events);
  if (!errors.empty()) expectFullDiskError(errors, eventsFile, "the error event");
  std::cout << "steps written before the disk was full: " << first.rbegin()->first
            << (errors.empty() ? "; the error event did not fit" : "; the error event fitted") << "\n";
  EXPECT_EQ(newestIntact(dir), checkpointStep);

  // Room again: the run resumes from the checkpoint, its next step as before; then stop it.
  ASSERT_EQ(tmpfs_->resize(tmpfs_->usedBytes() + (64u << 20)), "");
  ASSERT_TRUE(first.count(checkpointStep + 1)) << "step " << checkpointStep + 1 << " was written before";
  const auto log2 = root_ / "attempt2.log";
  test::EngineProcess resumed(trainArgv(dir, sets), log2);
  const Event step = test::waitForEvent(
      dir,
      [&](const Event& e) {
        return std::holds_alternative<protocol::StepEvent>(e.body) && e.seq > events.back().seq;
      },
      "a step of the resumed run");
  const auto& s = std::get<protocol::StepEvent>(step.body);
  EXPECT_EQ(s.step, checkpointStep + 1);
  EXPECT_EQ(s.loss, first.at(checkpointStep + 1));
  auto stop =
      protocol::issueControl(dir, protocol::ControlVerb::kStop, nlohmann::json{{"checkpoint", false}});
  ASSERT_TRUE(stop.isOk()) << stop.status().message();
  EXPECT_EQ(resumed.waitExit().value_or(-1), 0) << readText(log2);
}

}  // namespace
}  // namespace fs::trainer
