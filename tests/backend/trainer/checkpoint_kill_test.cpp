// 20 real kill -9s of a flamingo-train process in the middle of its
// checkpoint writes, for full checkpoint files and for sharded (FSDP)
// checkpoint directories (issue 26 item 2). Each attempt on the same run directory
// gets FS_FAULT_WRITE_KILL=0:<op> (NOTE [Fault injection] in
// backend/trainer/fault_injection.h): the process raises SIGKILL on itself
// before that file operation of its Checkpointer, so where it dies is
// deterministic but the death is real. After every kill the newest complete
// checkpoint on disk reads, its tensor hashes verify and it is never older
// than before the attempt; the next attempt resumes from it (none skipped),
// and every step of every attempt has the losses of an uninterrupted run,
// bit for bit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/checkpoint/checkpoint_manifest.h"
#include "tests/backend/trainer/checkpoint_checks.h"
#include "tests/backend/trainer/engine_test_util.h"

namespace fs::trainer {
namespace {

namespace fsys = std::filesystem;
using test::newestIntact;
using test::stepLosses;

// Runs flamingo-train with `argv` and the extra environment `env`, output to `log`: its exit
// status, or 128 + the signal that ended it.
int runProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
               const fsys::path& log) {
  std::vector<std::string> envStrings = env;
  for (char** e = environ; *e; ++e) envStrings.emplace_back(*e);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : envStrings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!std::freopen(log.c_str(), "a", stdout) || !std::freopen(log.c_str(), "a", stderr)) ::_exit(127);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

class CheckpointKillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fsys::temp_directory_path() / ("fs_ckpt_kill_" + std::to_string(::getpid()));
    fsys::remove_all(root_);
    fsys::create_directories(root_);
  }
  void TearDown() override {
    if (!HasFailure()) fsys::remove_all(root_);
  }

  // 2 epochs of 8 steps of the tiny preset on synthetic data, a checkpoint after every step, the last
  // 2 kept: every attempt writes (and prunes) checkpoints from its first step on.
  int train(const fsys::path& dir, const std::vector<std::string>& env) {
    std::vector<std::string> argv = {
        std::string(FS_BINARY_DIR) + "/bin/flamingo-train",          "train",     "--config",
        std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml", "--run-dir", dir.string()};
    for (const char* set :
         {"data.source=synthetic", "optim.epochs=2", "data.datasets[0].samples_per_epoch=32",
          "data.datasets[1].samples_per_epoch=16", "launch.threads_per_rank=1", "checkpoint.every_steps=1",
          "checkpoint.keep_last=2"}) {
      argv.push_back("--set");
      argv.push_back(set);
    }
    for (const auto& set : sets_) {
      argv.push_back("--set");
      argv.push_back(set);
    }
    return runProcess(argv, env, root_ / "log.txt");
  }

  // The uninterrupted run, then 20 killed attempts on another run directory and a last one that
  // finishes. `perSave`: the file operations of one checkpoint write with its prune.
  void twentyKills(int perSave);

  std::vector<std::string> sets_;  // more --set for this test's runs

  fsys::path root_;
};

void CheckpointKillTest::twentyKills(int perSave) {
  const auto full = root_ / "full";
  ASSERT_EQ(train(full, {}), 0) << "the uninterrupted run";
  const auto baseline = stepLosses(test::readEvents(full, true));
  ASSERT_EQ(baseline.size(), 16u);

  // Kill k dies before operation N of its attempt: even k in the first checkpoint the attempt writes
  // (or in its start-up recovery), odd k in the second, so the run moves on between kills. N steps
  // through the positions of a write by 3.
  // After every kill the newest complete checkpoint is intact and never older than before the attempt.
  const auto dir = root_ / "cut";
  int64_t newest = 0;
  for (int k = 0; k < 20; ++k) {
    SCOPED_TRACE("kill " + std::to_string(k));
    const int op = 1 + (k / 2) * 3 % perSave + (k % 2 == 1 ? perSave : 0);
    ASSERT_EQ(train(dir, {"FS_FAULT_WRITE_KILL=0:" + std::to_string(op)}), 128 + SIGKILL)
        << "attempt " << k << " was to be killed at checkpoint operation " << op;
    const int64_t now = newestIntact(dir);
    EXPECT_GE(now, newest) << "the kill lost the newest complete checkpoint";
    newest = now;
  }
  ASSERT_EQ(train(dir, {}), 0) << "the last attempt finishes";

  const auto events = test::readEvents(dir, true);
  // Each attempt after a kill resumed from a verified checkpoint (none was skipped); every step of every
  // attempt has the uninterrupted run's losses.
  for (const auto& e : events) {
    if (const auto* w = std::get_if<protocol::WarningEvent>(&e.body)) {
      EXPECT_NE(w->code, "checkpoint_skipped") << w->message;
    }
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) {
      EXPECT_EQ(s->loss, baseline.at(s->step)) << "step " << s->step;
    }
  }
  // A killed attempt loses the step events still queued for the telemetry writer (NOTE [Resuming an
  // append-only event file]); the run's last step is there.
  ASSERT_FALSE(stepLosses(events).empty());
  EXPECT_EQ(stepLosses(events).rbegin()->first, 16);
  EXPECT_EQ(newestIntact(dir), 16);
}

// Full checkpoint files: create, append, sync, close, rename, sync dir; the prune's remove, sync dir.
TEST_F(CheckpointKillTest, TwentyKillsDuringFullCheckpointWritesResumeExactly) {
  twentyKills(8);
}

// Sharded (FSDP, one rank) directories: mkdir .partial and sync, the rank file and index.json (6 each),
// rename and sync; the prune's rename to .pruned, sync, 3 removals, sync.
TEST_F(CheckpointKillTest, TwentyKillsDuringShardedCheckpointWritesResumeExactly) {
  sets_ = {"parallel.mode=fsdp", "checkpoint.format=sharded"};
  twentyKills(22);
}

}  // namespace
}  // namespace fs::trainer
