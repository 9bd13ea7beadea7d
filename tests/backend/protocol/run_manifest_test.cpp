// run.json and the run directory helpers it is written with (run_dir.h).
#include "backend/protocol/wire/run_manifest.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "backend/protocol/io/fault_write_env.h"
#include "backend/protocol/wire/run_dir.h"
#include "tests/backend/protocol/wire_samples.h"

namespace fs::protocol {
namespace {

namespace stdfs = std::filesystem;

class RunManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stdfs::temp_directory_path() / ("fs_manifest_test_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(dir_);
    ASSERT_TRUE(RunDir(dir_).create().isOk());
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  static RunManifest sample() { return test::sampleManifest(); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : stdfs::directory_iterator(dir_)) {
      if (e.is_regular_file()) out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  void writeRaw(const std::string& text) { std::ofstream(dir_ / "run.json") << text; }

  stdfs::path dir_;
};

TEST_F(RunManifestTest, RoundTrip) {
  RunManifest m = sample();
  ASSERT_TRUE(writeManifest(dir_, m).isOk());
  auto back = readManifest(dir_);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value(), m);
  RunManifest minimal;
  minimal.run_id = "r";
  auto decoded = decodeManifest(encodeManifest(minimal));
  ASSERT_TRUE(decoded.isOk()) << decoded.status().message();
  EXPECT_EQ(decoded.value(), minimal);
}

// NOTE [Restarts] (backend/launch/node_agent.h): rank 0 appends each start with the agent's variables.
TEST_F(RunManifestTest, AttemptsRoundTripAndAreRecordedFromTheAgentsVariables) {
  RunManifest m = sample();
  recordAttempt(&m, attemptEnvironment(nullptr), 100);
  ASSERT_EQ(m.attempts.size(), 1u);
  EXPECT_EQ(m.attempts[0], (RunAttempt{0, 100, "start", std::nullopt, std::nullopt, std::nullopt}));
  // The agent's restart: its count, limit, reason and the failure's time.
  static std::map<std::string, std::string> env;
  env = {{"TORCHELASTIC_RESTART_COUNT", "1"},
         {"TORCHELASTIC_MAX_RESTARTS", "3"},
         {"FLAMINGO_RESTART_REASON", "rank 1 (pid 4321) was killed by SIGKILL"},
         {"FLAMINGO_RESTART_FAILED_MS", "90"}};
  auto lookup = [](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  recordAttempt(&m, attemptEnvironment(lookup), 200);
  ASSERT_EQ(m.attempts.size(), 2u);
  EXPECT_EQ(m.attempts[1], (RunAttempt{1, 200, "rank 1 (pid 4321) was killed by SIGKILL", 1, 3, 90}));
  // Started again without an agent restart (by hand, SLURM's requeue): "resumed".
  env = {{"TORCHELASTIC_RESTART_COUNT", "0"}, {"FLAMINGO_RESTART_REASON", "start"}};
  recordAttempt(&m, attemptEnvironment(lookup), 300);
  EXPECT_EQ(m.attempts[2], (RunAttempt{2, 300, "resumed", 0, std::nullopt, std::nullopt}));
  // Garbage in the variables is not a number.
  env = {{"TORCHELASTIC_RESTART_COUNT", "x"}, {"FLAMINGO_RESTART_FAILED_MS", "-5"}};
  EXPECT_FALSE(attemptEnvironment(lookup).restart.has_value());
  EXPECT_FALSE(attemptEnvironment(lookup).failed.has_value());

  ASSERT_TRUE(writeManifest(dir_, m).isOk());
  auto back = readManifest(dir_);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value(), m);
  // Out of order: named.
  m.attempts[1].attempt = 5;
  Status bad = writeManifest(dir_, m);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("attempts[1].attempt is 5; expected 1"), std::string::npos) << bad.message();
  // A 1.0 file (no attempts) still reads.
  auto j = nlohmann::json::parse(encodeManifest(sample()));
  j["schema_version"] = "1.0";
  j.erase("attempts");
  auto old = decodeManifest(j.dump());
  ASSERT_TRUE(old.isOk()) << old.status().message();
  EXPECT_TRUE(old->attempts.empty());
}

TEST_F(RunManifestTest, EncodingIsReadableJson) {
  std::string text = encodeManifest(sample());
  EXPECT_EQ(text.back(), '\n');
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["schema_version"], "1.1");
  EXPECT_EQ(j["launcher"], "ssh");
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["created"], 1717000000000);
  EXPECT_EQ(j["pid"], 4242);
  RunManifest no_pid = sample();
  no_pid.pid.reset();
  EXPECT_FALSE(nlohmann::json::parse(encodeManifest(no_pid)).contains("pid"));
}

TEST_F(RunManifestTest, NewerMajorRejectedNewerMinorAccepted) {
  auto j = nlohmann::json::parse(encodeManifest(sample()));
  j["schema_version"] = "2.0";
  writeRaw(j.dump());
  auto r = readManifest(dir_);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(),
            (dir_ / "run.json").string() +
                ": schema version 2.0 is newer than this reader (1.x); update Flamingo Studio");
  j["schema_version"] = "1.4";
  j["gpu_model"] = "H100";  // a field a newer minor added
  writeRaw(j.dump());
  r = readManifest(dir_);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->schema_version, "1.4");
  EXPECT_EQ(r->run_id, "run-20240601-abc");
  // Written again, it carries this writer's version, and the newer minor's field is not kept
  // (fuzz/regressions/run_manifest/newer_minor_version.json).
  const std::string again = encodeManifest(r.value());
  EXPECT_EQ(nlohmann::json::parse(again)["schema_version"], std::string(kManifestSchemaVersion));
  EXPECT_EQ(again.find("gpu_model"), std::string::npos) << again;
}

TEST_F(RunManifestTest, MissingAndBadFieldsAreNamed) {
  auto j = nlohmann::json::parse(encodeManifest(sample()));
  j.erase("world_size");
  auto r = decodeManifest(j.dump());
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(), "run.json: missing required field 'world_size'");
  j = nlohmann::json::parse(encodeManifest(sample()));
  j["launcher"] = "pbs";
  EXPECT_EQ(decodeManifest(j.dump()).status().message(),
            "run.json: field 'launcher' is \"pbs\", expected one of local|ssh|slurm");
  j = nlohmann::json::parse(encodeManifest(sample()));
  j["world_size"] = 6;
  EXPECT_EQ(decodeManifest(j.dump()).status().message(),
            "run.json: world_size is 6 but nnodes x nproc_per_node is 2 x 4; expected them equal");
  EXPECT_NE(decodeManifest("{\"schema_version\": ").status().message().find("run.json: malformed JSON"),
            std::string::npos);
  EXPECT_EQ(readManifest(dir_ / "nope").status().code(), Status::Code::kNotFound);
}

TEST_F(RunManifestTest, WriteValidatesFirst) {
  RunManifest m = sample();
  m.hosts = {"node-a"};
  Status s = writeManifest(dir_, m);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("hosts lists 1 hosts but nnodes is 2"), std::string::npos) << s.message();
  EXPECT_FALSE(stdfs::exists(dir_ / "run.json"));
}

TEST_F(RunManifestTest, AtomicWriteLeavesNoTempFiles) {
  for (int i = 0; i < 20; ++i) {
    RunManifest m = sample();
    m.updated += i;
    ASSERT_TRUE(writeManifest(dir_, m).isOk());
  }
  EXPECT_EQ(names(), (std::vector<std::string>{"run.json"}));
  EXPECT_EQ(readManifest(dir_)->updated, sample().updated + 19);
}

// NOTE [Cutting a write sequence]: a process killed before each of the atomic write's 6 operations
// (create temp, append, sync, close, rename, directory sync) leaves the old or the new run.json, never
// a torn one, and at most a temporary that removeStaleTempFiles clears.
TEST_F(RunManifestTest, CrashAtAnyStageLeavesOldOrNewNeverTorn) {
  RunManifest old_m = sample();
  ASSERT_TRUE(writeManifest(dir_, old_m).isOk());
  for (int n = 1; n <= 6; ++n) {
    RunManifest new_m = sample();
    new_m.state = RunState::kFinished;
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      FaultWriteEnv env(posixWriteEnv(), {.at = n, .action = FaultWriteEnv::Action::kCrash});
      AtomicWriteOptions crash;
      crash.env = &env;
      ::_exit(writeManifest(dir_, new_m, crash).isOk() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "op " << n << ": the write was cut";
    auto now = readManifest(dir_);
    ASSERT_TRUE(now.isOk()) << now.status().message();
    EXPECT_EQ(now.value(), n == 6 ? new_m : old_m) << "op " << n;  // renamed before the directory sync
    std::vector<stdfs::path> removed;
    ASSERT_TRUE(removeStaleTempFiles(dir_, &removed).isOk());
    EXPECT_EQ(removed.size(), n >= 2 && n <= 5 ? 1u : 0u) << "op " << n;
    EXPECT_EQ(names(), (std::vector<std::string>{"run.json"})) << "op " << n;
    ASSERT_TRUE(writeManifest(dir_, old_m).isOk());
  }
}

TEST_F(RunManifestTest, UpdateState) {
  ASSERT_TRUE(writeManifest(dir_, sample()).isOk());
  auto m = updateManifestState(dir_, RunState::kPaused, 1717000009999);
  ASSERT_TRUE(m.isOk()) << m.status().message();
  EXPECT_EQ(readManifest(dir_)->state, RunState::kPaused);
  EXPECT_EQ(readManifest(dir_)->updated, 1717000009999);
  EXPECT_FALSE(updateManifestState(dir_ / "missing", RunState::kPaused, 1).isOk());
}

// ---- run_dir.h -------------------------------------------------------------------------

TEST_F(RunManifestTest, RunDirLayout) {
  RunDir d(dir_);
  EXPECT_EQ(d.configFile(), dir_ / "config.yaml");
  EXPECT_EQ(d.manifestFile(), dir_ / "run.json");
  EXPECT_EQ(d.eventsFile(), dir_ / "events.jsonl");
  EXPECT_EQ(d.agentEventsFile("node-a.cluster"), dir_ / "agent-node-a.cluster.jsonl");
  EXPECT_EQ(agentEventsFileName("../etc/x y"), "agent-_._etc_x_y.jsonl");
  EXPECT_EQ(d.controlDir(), dir_ / "control");
  EXPECT_EQ(d.controlDoneDir(), dir_ / "control" / "done");
  EXPECT_EQ(d.rankLogFile(3), dir_ / "logs" / "rank-3.log");
  EXPECT_TRUE(stdfs::is_directory(d.controlDoneDir()));
  EXPECT_TRUE(stdfs::is_directory(d.logsDir()));
  EXPECT_TRUE(d.create().isOk()) << "idempotent";
}

TEST_F(RunManifestTest, CheckpointNames) {
  EXPECT_EQ(checkpointFileName(CheckpointKind::kEpoch, 3, 0), "checkpoint_3.pt");
  EXPECT_EQ(checkpointFileName(CheckpointKind::kStep, 0, 1500), "checkpoint_step1500.pt");
  EXPECT_EQ(checkpointFileName(CheckpointKind::kFinal, 9, 9), "checkpoint_final.pt");
  EXPECT_EQ(parseCheckpointFileName("checkpoint_3.pt"), (CheckpointName{CheckpointKind::kEpoch, 3, 0}));
  EXPECT_EQ(parseCheckpointFileName("checkpoint_step1500.pt"),
            (CheckpointName{CheckpointKind::kStep, 0, 1500}));
  EXPECT_EQ(parseCheckpointFileName("checkpoint_final.pt"), (CheckpointName{CheckpointKind::kFinal, 0, 0}));
  for (const char* bad : {"checkpoint_.pt", "checkpoint_x.pt", "checkpoint_step.pt", "checkpoint_-1.pt",
                          ".checkpoint_3.pt.tmp-1-0", "checkpoint_3.pth", "final_weights.pt"}) {
    EXPECT_FALSE(parseCheckpointFileName(bad).has_value()) << bad;
  }
}

TEST_F(RunManifestTest, AtomicCreateNeverReplaces) {
  stdfs::path target = dir_ / "x.json";
  auto first = atomicCreateFile(target, "one");
  ASSERT_TRUE(first.isOk() && first.value());
  auto second = atomicCreateFile(target, "two");
  ASSERT_TRUE(second.isOk());
  EXPECT_FALSE(second.value());
  EXPECT_EQ(readSmallFile(target).value(), "one");
  EXPECT_EQ(names(), (std::vector<std::string>{"x.json"}));
  EXPECT_TRUE(isTempFileName(tempFileName("run.json")));
  EXPECT_FALSE(isTempFileName("run.json"));
  Status s = atomicWriteFile(dir_ / "no_such_dir" / "f", "x");
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_NE(s.message().find("no_such_dir"), std::string::npos) << s.message();
}

TEST_F(RunManifestTest, DeepNestingIsRefusedBeforeParsing) {  // NOTE [JSON nesting]
  auto r = decodeManifest(R"({"schema_version":"1.0","hosts":)" + std::string(100000, '[') +
                          std::string(100000, ']') + "}");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(), "run.json: JSON nested deeper than 64 levels");
}

}  // namespace
}  // namespace fs::protocol
