// Crash-consistent checkpoint writes (issue 26 item 2; NOTE [Cutting a write
// sequence] in backend/protocol/io/fault_write_env.h, NOTE [Replacing a
// sharded checkpoint] in backend/checkpoint/checkpoint_recovery.h).
//
// A dry run records the Checkpointer's file operations. Then, for every
// operation N of one checkpoint's write sequence, a training run on the tiny
// preset is cut there, once by an IOError (the run must stop with an error
// naming the path) and once by SIGKILL before the operation. The next start
// of the same run directory must put leftovers right and say so, resume from
// the newest complete checkpoint, which is never older than the newest one
// completed before the cut and whose tensor hashes verify, and produce exactly
// the losses of the uninterrupted run.
//
// Every training run happens in a forked child of this process, which itself
// never trains: the children are cut (SIGKILL) without taking the test down,
// and a parent that ran no intra-op thread pool forks safely.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/checkpoint/checkpoint_manifest.h"
#include "backend/checkpoint/checkpoint_recovery.h"
#include "backend/protocol/io/fault_write_env.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/telemetry/stop_signals.h"
#include "backend/trainer/trainer.h"
#include "tests/backend/trainer/engine_test_util.h"

namespace fs::checkpoint {
namespace {

namespace fsys = std::filesystem;
using protocol::FaultWriteEnv;

// 8 optimizer steps of the tiny preset on synthetic data, a step checkpoint every 2, one thread.
protocol::RunConfig config(const std::vector<std::string>& extra) {
  std::vector<std::string> sets = {"optim.epochs=1", "data.datasets[0].samples_per_epoch=32",
                                   "data.datasets[1].samples_per_epoch=16", "launch.threads_per_rank=1",
                                   "checkpoint.every_steps=2"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return trainer::test::tinyConfig(sets);
}

// Runs `body` in a forked child: its return value, or 128 + the signal that ended it.
int inChild(const std::function<int()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 3;
    try {
      rc = body();
    } catch (...) {
    }
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(rc);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

struct Attempt {
  int64_t cutAt = 0;  // 0: no cut
  FaultWriteEnv::Action action = FaultWriteEnv::Action::kFail;
  int64_t stopAtStep = 0;  // > 0: SIGTERM after that step: a stop writes a step checkpoint again
  fsys::path traceFile;    // where the child writes the Checkpointer's operations, one a line
  fsys::path errorFile;    // where the child writes the run's error
};

// One training attempt on `dir` in a child: 0 finished or stopped, 1 failed, 128 + 9 killed.
int runAttempt(const protocol::RunConfig& c, const fsys::path& dir, const Attempt& a) {
  return inChild([&] {
    telemetry::clearStopRequests();
    FaultWriteEnv env(protocol::posixWriteEnv(), {.at = a.cutAt, .action = a.action});
    trainer::TrainerOptions options;
    options.checkpointWriteEnv = &env;
    options.onProgress = [&](const trainer::Progress& p) {
      if (a.stopAtStep > 0 && p.step == a.stopAtStep) std::raise(SIGTERM);
    };
    auto outcome = trainer::runTraining(c, dir, options);
    if (!a.traceFile.empty()) {
      std::ofstream out(a.traceFile);
      for (const auto& line : env.trace()) out << line << "\n";
    }
    if (!outcome.isOk() && !a.errorFile.empty()) std::ofstream(a.errorFile) << outcome.status().message();
    return outcome.isOk() ? 0 : 1;
  });
}

std::vector<std::string> readLines(const fsys::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The step of a checkpoint that "rename A -> B" puts in place under its name; -1 for other lines.
int64_t stepPutInPlace(const std::string& line) {
  const auto arrow = line.find(" -> ");
  if (line.rfind("rename ", 0) != 0 || arrow == std::string::npos) return -1;
  auto name = protocol::parseCheckpointFileName(fsys::path(line.substr(arrow + 4)).filename().string());
  return name && name->kind == protocol::CheckpointKind::kStep ? name->step : -1;
}

// Hidden leftovers of checkpoint writes in `dir`.
std::vector<std::string> leftovers(const fsys::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fsys::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name[0] == '.' && name.find("checkpoint_") != std::string::npos) out.push_back(name);
  }
  return out;
}

struct Scenario {
  std::vector<std::string> sets;
  int64_t stopAtStep = 0;
  // The cut range: from the `occurrence`-th operation whose line contains `from` up to the first one
  // after it containing `to` (empty: to the end of the run).
  std::string from;
  int occurrence = 1;
  std::string to;
};

class CheckpointCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    at::set_num_threads(1);  // this process only forks the runs: no intra-op thread pool in it
    root_ = fsys::temp_directory_path() / ("fs_ckpt_crash_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fsys::remove_all(root_);
    fsys::create_directories(root_);
  }
  void TearDown() override {
    if (!HasFailure()) fsys::remove_all(root_);
  }

  // Cuts the scenario's sequence at each operation in turn, by `action`; checks every invariant.
  void cutEveryOperation(const Scenario& s, FaultWriteEnv::Action action) {
    const auto c = config(s.sets);
    // The uninterrupted run (stopped and resumed the same way when the scenario stops): its losses and
    // the Checkpointer's operations.
    const auto full = root_ / "full";
    ASSERT_EQ(runAttempt(c, full, {.stopAtStep = s.stopAtStep, .traceFile = root_ / "trace.txt"}), 0);
    if (s.stopAtStep > 0) {
      ASSERT_EQ(runAttempt(c, full, {}), 0);
    }
    const auto baseline = stepLosses(trainer::test::readEvents(full, true));
    ASSERT_EQ(baseline.size(), 8u);
    const auto trace = readLines(root_ / "trace.txt");
    size_t lo = trace.size(), hi = trace.size();
    for (size_t i = 0, seen = 0; i < trace.size(); ++i) {
      if (trace[i].find(s.from) != std::string::npos && ++seen == static_cast<size_t>(s.occurrence)) {
        lo = i;
        break;
      }
    }
    for (size_t i = lo + 1; !s.to.empty() && i < trace.size(); ++i) {
      if (trace[i].find(s.to) != std::string::npos) {
        hi = i;
        break;
      }
    }
    ASSERT_LT(lo, hi) << "no operation on " << s.from << " in the dry run";
    int64_t writing = 0;  // the newest step checkpoint the sequence puts in place
    for (size_t i = lo; i < hi; ++i) writing = std::max(writing, stepPutInPlace(trace[i]));
    ASSERT_GT(writing, 0);

    for (size_t n = lo; n < hi; ++n) {
      SCOPED_TRACE("cut before operation " + std::to_string(n + 1) + ": " + trace[n]);
      int64_t complete = 0;  // the newest checkpoint put in place before the cut
      for (size_t i = 0; i < n; ++i) complete = std::max(complete, stepPutInPlace(trace[i]));
      const auto dir = root_ / "cut";
      fsys::remove_all(dir);
      const int rc = runAttempt(c, dir,
                                {.cutAt = static_cast<int64_t>(n + 1),
                                 .action = action,
                                 .stopAtStep = s.stopAtStep,
                                 .errorFile = root_ / "error.txt"});
      if (action == FaultWriteEnv::Action::kCrash) {
        ASSERT_EQ(rc, 128 + SIGKILL);
      } else {
        ASSERT_EQ(rc, 1);
        // The error names the operation and a path in the run directory.
        const std::string error = readLines(root_ / "error.txt").at(0);
        const std::string op = trace[n].substr(0, trace[n].find(' '));
        EXPECT_NE(error.find("injected fault: " + op + " " + dir.string()), std::string::npos) << error;
      }
      const auto left = leftovers(dir);
      ASSERT_EQ(runAttempt(c, dir, {}), 0) << "the resumed run finishes";

      const auto events = trainer::test::readEvents(dir, true);
      size_t second = 0;  // index of the resumed attempt's run_started
      for (size_t i = 0; i < events.size(); ++i) {
        if (std::holds_alternative<protocol::RunStartedEvent>(events[i].body)) second = i;
      }
      ASSERT_GT(second, 0u);
      // Recovery and resume speak before run_started; the first attempt started in an empty directory.
      std::string recovered;
      for (const auto& e : events) {
        if (const auto* w = std::get_if<protocol::WarningEvent>(&e.body)) {
          EXPECT_NE(w->code, "checkpoint_skipped") << w->message;  // the newest complete one verified
          if (w->code == "checkpoint_recovered") recovered += w->message + "\n";
        }
      }
      int64_t resumedAt = -1;
      for (size_t i = second; i < events.size() && resumedAt < 0; ++i) {
        if (const auto* st = std::get_if<protocol::StepEvent>(&events[i].body)) resumedAt = st->step - 1;
      }
      EXPECT_GE(resumedAt, complete) << "a checkpoint completed before the cut was lost";
      EXPECT_LE(resumedAt, writing);
      for (const auto& name : left) {
        EXPECT_NE(recovered.find(name), std::string::npos) << name << "\n" << recovered;
      }
      EXPECT_TRUE(leftovers(dir).empty());
      // Every step of both attempts has the uninterrupted run's losses, bit for bit.
      for (const auto& e : events) {
        if (const auto* st = std::get_if<protocol::StepEvent>(&e.body)) {
          EXPECT_EQ(st->loss, baseline.at(st->step)) << "step " << st->step;
        }
      }
      auto newest = newestCompleteCheckpoint(dir, nullptr);
      ASSERT_TRUE(newest.has_value());
      auto ck = readCheckpoint(*newest);
      ASSERT_TRUE(ck.isOk()) << ck.status().message();
      EXPECT_TRUE(verifyCheckpointManifest(ck->resume.manifest, ck->modelState, *newest).isOk());
      if (HasFailure()) return;
    }
  }

  static std::map<int64_t, std::map<std::string, double>> stepLosses(
      const std::vector<protocol::Event>& events) {
    std::map<int64_t, std::map<std::string, double>> out;
    for (const auto& e : events) {
      if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) out[s->step] = s->loss;
    }
    return out;
  }

  fsys::path root_;
};

// A full checkpoint file (step 6; nothing pruned).
const Scenario kFull{{"checkpoint.keep_last=10"}, 0, "checkpoint_step6", 1, "checkpoint_step8"};
// Step checkpoints keeping the last 2: writing step 6 prunes step 2.
const Scenario kKeepLast{{"checkpoint.keep_last=2"}, 0, "checkpoint_step6", 1, "checkpoint_step8"};
// Sharded (FSDP) checkpoints keeping the last 2, stopped after step 6: the periodic step-6 checkpoint
// (pruning step 2's directory), then the stop's step-6 checkpoint replacing it.
const Scenario kSharded{{"parallel.mode=fsdp", "checkpoint.format=sharded", "checkpoint.keep_last=2"},
                        6,
                        "checkpoint_step6",
                        1,
                        ""};

TEST_F(CheckpointCrashTest, FullCheckpointCutByAnError) {
  cutEveryOperation(kFull, FaultWriteEnv::Action::kFail);
}
TEST_F(CheckpointCrashTest, FullCheckpointCutByAKill) {
  cutEveryOperation(kFull, FaultWriteEnv::Action::kCrash);
}
TEST_F(CheckpointCrashTest, StepCheckpointsKeepingTheLastTwoCutByAnError) {
  cutEveryOperation(kKeepLast, FaultWriteEnv::Action::kFail);
}
TEST_F(CheckpointCrashTest, StepCheckpointsKeepingTheLastTwoCutByAKill) {
  cutEveryOperation(kKeepLast, FaultWriteEnv::Action::kCrash);
}
TEST_F(CheckpointCrashTest, ShardedCheckpointReplacingThePreviousCutByAnError) {
  cutEveryOperation(kSharded, FaultWriteEnv::Action::kFail);
}
TEST_F(CheckpointCrashTest, ShardedCheckpointReplacingThePreviousCutByAKill) {
  cutEveryOperation(kSharded, FaultWriteEnv::Action::kCrash);
}

// The start-up step by itself, on hand-made leftovers: each is restored or removed, and named.
TEST_F(CheckpointCrashTest, StartupRestoresOrRemovesLeftoversAndSaysSo) {
  const auto dir = root_ / "run";
  fsys::create_directories(dir / ".checkpoint_step4.pt.old");
  std::ofstream(dir / ".checkpoint_step4.pt.old" / "rank-0.pt") << "x";
  fsys::create_directories(dir / ".checkpoint_step6.pt.partial");  // no index.json: incomplete
  fsys::create_directories(dir / ".checkpoint_step2.pt.pruned");
  fsys::create_directories(dir / "checkpoint_step8.pt");
  fsys::create_directories(dir / ".checkpoint_step8.pt.old");  // its replacement completed
  std::ofstream(dir / ".checkpoint_step8.pt.tmp-12-0") << "torn";
  std::ofstream(dir / ".run.json.tmp-12-1") << "not ours";
  std::vector<std::string> notes;
  ASSERT_TRUE(recoverCheckpointLeftovers(dir, protocol::posixWriteEnv(), &notes).isOk());
  std::vector<std::string> names;
  for (const auto& e : fsys::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{".run.json.tmp-12-1", "checkpoint_step4.pt", "checkpoint_step8.pt"}));
  EXPECT_TRUE(fsys::exists(dir / "checkpoint_step4.pt" / "rank-0.pt"));
  ASSERT_EQ(notes.size(), 5u);
  std::string all;
  for (const auto& n : notes) all += n + "\n";
  for (const char* name :
       {".checkpoint_step4.pt.old", ".checkpoint_step6.pt.partial", ".checkpoint_step2.pt.pruned",
        ".checkpoint_step8.pt.old", ".checkpoint_step8.pt.tmp-12-0"})
    EXPECT_NE(all.find(name), std::string::npos) << name << "\n" << all;
  EXPECT_NE(all.find("restored"), std::string::npos) << all;
}

}  // namespace
}  // namespace fs::checkpoint
