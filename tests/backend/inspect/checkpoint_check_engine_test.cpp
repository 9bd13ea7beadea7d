// `flamingo-train checkpoint state` and `checkpoint check` on checkpoints a
// real single-rank tiny run writes (started once for the suite).
//
// state: a step checkpoint's data position in words is the run's known one
// (step k of batch sizes 4 and 2: k batches of each), every optimizer state
// carries a name whose manifest shape is its moments' shape; with the shard
// pipeline (the preset's generated shards) it names the shard each dataset's
// reader stood at, counted against the shard's samples as Python's tarfile
// reads them.
// check: a checkpoint with planted missing, unexpected, mis-shaped and
// duplicate keys gives, class by class, the report the engine's loader gives
// (Flamingo::loadStateDict with expected-frozen marked, as on resume), and
// the real resume refuses it with the same summary.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "backend/checkpoint/weights.h"
#include "backend/inspect/checkpoint_index.h"
#include "backend/model/flamingo.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::inspect {
namespace {

namespace fsys = std::filesystem;
using nlohmann::json;

// Runs argv with stdout to `out` and stderr to `err`; its exit status (-1: did not start or was killed).
int run(const std::vector<std::string>& argv, const std::string& out, const std::string& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (std::freopen(out.c_str(), "w", stdout) == nullptr ||
        std::freopen(err.c_str(), "w", stderr) == nullptr)
      ::_exit(127);
    ::setenv("OMP_NUM_THREADS", "1", 1);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

constexpr int kSteps = 3;  // checkpoint.every_steps

// flamingo-train train of the tiny preset into `runDir` with `sets` (one epoch, one thread, a step
// checkpoint every kSteps, 5 kept); "" when it succeeded, else what failed with its log.
std::string trainTiny(const fsys::path& runDir, std::vector<std::string> sets, const std::string& log) {
  std::vector<std::string> argv = {FS_TEST_FLAMINGO_TRAIN,
                                   "train",
                                   "--config",
                                   std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml",
                                   "--run-dir",
                                   runDir.string()};
  sets.insert(sets.end(), {"optim.epochs=1", "launch.threads_per_rank=1",
                           "checkpoint.every_steps=" + std::to_string(kSteps), "checkpoint.keep_last=5"});
  for (const std::string& set : sets) {
    argv.push_back("--set");
    argv.push_back(set);
  }
  return run(argv, log, log) == 0 ? "" : "flamingo-train train failed: " + slurp(log);
}

class CheckpointCheckEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fsys::path(fsys::temp_directory_path() / ("fs_inspect_check_" + std::to_string(::getpid())));
    fsys::remove_all(*dir_);
    fsys::create_directories(*dir_);
    *error_ = trainTiny(
        runDir(),
        {"data.source=synthetic", "data.datasets[0].batch_size=4", "data.datasets[0].samples_per_epoch=32",
         "data.datasets[1].batch_size=2", "data.datasets[1].samples_per_epoch=16"},
        (*dir_ / "train.log").string());
    if (!error_->empty()) return;
    const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                            "/tests/backend/inspect/plant_keys.py " + step().string() + " " +
                            planted().string();
    if (std::system(cmd.c_str()) != 0)
      *error_ = "plant_keys.py failed (needs " FS_PYTHON " with torch: run scripts/install-deps.sh)";
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fsys::remove_all(*dir_, ec);
  }
  void SetUp() override { ASSERT_TRUE(error_->empty()) << *error_; }

  static fsys::path runDir() { return *dir_ / "run"; }
  static fsys::path step() { return runDir() / ("checkpoint_step" + std::to_string(kSteps) + ".pt"); }
  static fsys::path planted() { return *dir_ / "planted.pt"; }

  // flamingo-train's JSON output and exit status.
  static json cli(const std::vector<std::string>& args, int* rc) {
    std::vector<std::string> argv = {FS_TEST_FLAMINGO_TRAIN};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string out = (*dir_ / "cli.out").string(), err = (*dir_ / "cli.err").string();
    *rc = run(argv, out, err);
    const auto j = json::parse(slurp(out), nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << slurp(err);
    return j;
  }

  static fsys::path* dir_;
  static std::string* error_;
};

fsys::path* CheckpointCheckEngineTest::dir_ = nullptr;
std::string* CheckpointCheckEngineTest::error_ = new std::string;

TEST_F(CheckpointCheckEngineTest, StateNamesTheRunsDataPositionAndEveryOptimizerParameter) {
  int rc = 0;
  const json j = cli({"checkpoint", "state", "--json", step().string()}, &rc);
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(j.at("format"), "flamingo-studio checkpoint");
  const json& r = j.at("resume");
  EXPECT_EQ(r.at("kind"), "step");
  EXPECT_EQ(r.at("step"), kSteps);
  EXPECT_EQ(r.at("epoch"), 0);
  // The resume record's own fields, its RNG states as sizes and hashes only, without the manifest.
  EXPECT_EQ(r.at("format"), 1);
  EXPECT_EQ(r.at("iteration"), kSteps);
  for (const char* raw : {"rng_torch_cpu", "rng_torch_cuda", "rng_own", "manifest"})
    EXPECT_FALSE(r.contains(raw));
  EXPECT_EQ(r.at("data_position").at("text"),
            "epoch 0: laion 3 batches of 4 = 12 samples, mmc4 3 batches of 2 = 6 samples, on rank 0 of 1 "
            "(synthetic source)");
  // The position's fields are the record's (NOTE [Checkpoint records]); its RNG state is given as a size.
  const json& position = r.at("data_position");
  EXPECT_EQ(position.at("format"), 1);
  EXPECT_EQ(position.at("datasets"), json::array({"laion", "mmc4"}));
  EXPECT_EQ(position.at("batches_consumed"), json::array({3, 3}));
  EXPECT_TRUE(position.at("cursors").is_array());
  EXPECT_FALSE(position.contains("rng_state"));
  EXPECT_TRUE(position.at("rng_state_bytes").is_number_unsigned());
  ASSERT_GE(r.at("rng").size(), 2u);
  EXPECT_EQ(r.at("rng")[0].at("name"), "torch CPU");
  EXPECT_EQ(r.at("rng")[0].at("bytes"), 5056);  // torch.get_rng_state(): the MT19937 state
  EXPECT_EQ(r.at("rng").back().at("bytes"), 32);
  EXPECT_EQ(j.at("lr_scheduler").at("last_epoch"), kSteps);
  // Every trainable parameter stepped, named, its moments shaped as the manifest records it.
  auto ckpt = CheckpointIndex::open(step().string());
  ASSERT_TRUE(ckpt.isOk()) << ckpt.status().message();
  ASSERT_TRUE(ckpt->manifest().has_value());
  std::map<std::string, std::vector<std::int64_t>> trainable;
  for (const auto& p : ckpt->manifest()->parameters)
    if (p.trainable) trainable[p.name] = p.shape;
  const json& params = j.at("optimizer").at("params");
  ASSERT_EQ(params.size(), trainable.size());
  std::set<std::string> named;
  for (const auto& p : params) {
    ASSERT_TRUE(p.at("name").is_string()) << p.dump();
    const std::string name = p.at("name");
    SCOPED_TRACE(name);
    ASSERT_TRUE(trainable.count(name));
    EXPECT_EQ(p.at("shape").get<std::vector<std::int64_t>>(), trainable.at(name));
    EXPECT_EQ(p.at("step"), kSteps);
    EXPECT_EQ(p.at("group"), name.find("gated_cross_attn") != std::string::npos ? 0 : 1);
    named.insert(name);
  }
  EXPECT_EQ(named.size(), trainable.size());
}

TEST_F(CheckpointCheckEngineTest, AnUntouchedCheckpointChecksOk) {
  int rc = 0;
  const json j =
      cli({"checkpoint", "check", "--json", "--config", (runDir() / "config.yaml").string(), step().string()},
          &rc);
  EXPECT_EQ(rc, 0) << j.dump(1);
  EXPECT_TRUE(j.at("ok").get<bool>());
  EXPECT_TRUE(j.at("missing").empty());
  EXPECT_FALSE(j.at("expected_frozen").empty());
}

TEST_F(CheckpointCheckEngineTest, CheckReportsClassByClassWhatTheEngineLoaderReports) {
  int rc = 0;
  const std::string config = (runDir() / "config.yaml").string();
  const json j = cli({"checkpoint", "check", "--json", "--config", config, planted().string()}, &rc);
  EXPECT_EQ(rc, 1) << j.dump(1);

  // The engine: the model of the run's config, frozen as training freezes it, loading the file.
  const auto load = protocol::loadConfigFile(config);
  ASSERT_TRUE(load.ok());
  auto model = model::Flamingo(model::FlamingoOptions::fromConfig(load.config.model));
  model->freezeAsOpenFlamingo();
  auto foreign = checkpoint::readForeignCheckpoint(planted().string());
  ASSERT_TRUE(foreign.isOk()) << foreign.status().message();
  auto report = model->loadStateDict(foreign->model);
  std::set<std::string> frozen;
  for (const auto& [name, t] : model->namedParameters())
    if (!t.requires_grad()) frozen.insert(name);
  report.markExpectedFrozen([&](const std::string& name) { return frozen.count(name) != 0; });

  using Names = std::vector<std::string>;
  EXPECT_EQ(j.at("loaded").get<Names>(), report.loaded);
  EXPECT_EQ(j.at("missing").get<Names>(), report.missing);
  EXPECT_EQ(j.at("expected_frozen").get<Names>(), report.expectedFrozen);
  EXPECT_EQ(j.at("unexpected").get<Names>(), report.unexpected);
  EXPECT_EQ(j.at("ignored").get<Names>(), report.ignored);
  ASSERT_EQ(j.at("mismatched").size(), report.mismatched.size());
  for (std::size_t i = 0; i < report.mismatched.size(); ++i) {
    EXPECT_EQ(j.at("mismatched")[i].at("name"), report.mismatched[i].name);
    EXPECT_EQ(j.at("mismatched")[i].at("expected").get<std::vector<std::int64_t>>(),
              report.mismatched[i].expected);
    EXPECT_EQ(j.at("mismatched")[i].at("got").get<std::vector<std::int64_t>>(), report.mismatched[i].got);
  }
  EXPECT_EQ(j.at("summary"), report.summary());
  // What was planted, in its class.
  EXPECT_EQ(report.missing, Names{"perceiver.latents"});
  EXPECT_EQ(report.unexpected, Names{"lang_encoder.not_a_parameter.weight"});
  ASSERT_EQ(report.mismatched.size(), 1u);
  EXPECT_EQ(report.mismatched[0].name, "perceiver.norm.weight");
  EXPECT_EQ(report.ignored, Names{"lang_encoder.gated_cross_attn_layers.0.attn_gate"});
  EXPECT_NE(std::find(report.loaded.begin(), report.loaded.end(),
                      "lang_encoder.model.decoder.layers.0.decoder_layer.fc1.bias"),
            report.loaded.end());

  // The real resume refuses it, with the same summary.
  const std::string log = (*dir_ / "resume.log").string();
  EXPECT_NE(run({FS_TEST_FLAMINGO_TRAIN, "train", "--config", config, "--run-dir",
                 (*dir_ / "resumed").string(), "--set", "checkpoint.resume_from=" + planted().string()},
                log, log),
            0);
  EXPECT_NE(slurp(log).find(report.summary()), std::string::npos) << slurp(log);
}

// The tiny preset as shipped: data.source "generated", real tar shards through the shard pipeline.
class ShardPositionEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fsys::path(fsys::temp_directory_path() / ("fs_inspect_shards_" + std::to_string(::getpid())));
    fsys::remove_all(*dir_);
    fsys::create_directories(*dir_);
    *error_ = trainTiny(*dir_ / "run", {}, (*dir_ / "train.log").string());
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fsys::remove_all(*dir_, ec);
  }
  void SetUp() override { ASSERT_TRUE(error_->empty()) << *error_; }

  // Samples in a tar shard: its members' distinct keys (the name up to the first dot), by Python's tarfile.
  static std::int64_t samplesIn(const std::string& shard) {
    const std::string out = (*dir_ / "count.out").string();
    const int rc =
        run({FS_PYTHON, "-c",
             "import os, sys, tarfile; "
             "print(len({os.path.basename(m.name).split('.')[0] for m in tarfile.open(sys.argv[1]) "
             "if m.isfile()}))",
             shard},
            out, out);
    EXPECT_EQ(rc, 0) << slurp(out);
    return std::stoll(slurp(out));
  }

  static fsys::path* dir_;
  static std::string* error_;
};

fsys::path* ShardPositionEngineTest::dir_ = nullptr;
std::string* ShardPositionEngineTest::error_ = new std::string;

TEST_F(ShardPositionEngineTest, AStepCheckpointNamesTheShardEachDatasetStandsAt) {
  const fsys::path step = *dir_ / "run" / ("checkpoint_step" + std::to_string(kSteps) + ".pt");
  std::vector<std::string> argv = {FS_TEST_FLAMINGO_TRAIN, "checkpoint", "state", "--json", step.string()};
  const std::string out = (*dir_ / "state.out").string(), err = (*dir_ / "state.err").string();
  ASSERT_EQ(run(argv, out, err), 0) << slurp(err);
  const json j = json::parse(slurp(out));
  const json& p = j.at("resume").at("data_position");
  EXPECT_EQ(p.at("source"), "shards");
  ASSERT_EQ(p.at("cursors").size(), 2u) << p.dump();
  const fsys::path shards = *dir_ / "run" / "generated-data" / "rank0";
  std::string text = "epoch 0: ";
  const std::vector<std::pair<std::string, int>> datasets = {{"laion", 4}, {"mmc4", 2}};
  for (std::size_t d = 0; d < datasets.size(); ++d) {
    const auto& [name, batch] = datasets[d];
    const json& c = p.at("cursors")[d];
    SCOPED_TRACE(c.dump());
    const std::string shard = c.at("shard");
    EXPECT_TRUE(fsys::equivalent(fsys::path(shard).parent_path(), shards));
    const std::string file = fsys::path(shard).filename().string();  // "laion-000002.tar"
    ASSERT_EQ(file.rfind(name + "-", 0), 0u);
    EXPECT_EQ(c.at("shard_index"), std::stoll(file.substr(name.size() + 1, 6)));  // the expanded list's order
    std::int64_t count = 0;
    for (const auto& e : fsys::directory_iterator(shards))
      count += e.path().filename().string().rfind(name + "-", 0) == 0 && e.path().extension() == ".tar";
    EXPECT_EQ(c.at("shard_count"), count);
    // Three batches need fewer samples than the default 5,000-sample shuffle buffer holds, so they are
    // released only once the pass is read: the cursor is the pass's last shard, read to its end.
    EXPECT_EQ(c.at("samples_read"), samplesIn(shard));
    EXPECT_EQ(c.at("pass"), 0);
    EXPECT_EQ(c.at("worker"), 0);
    text += std::string(d ? "; " : "") + name + " at shard " + shard + " (index " +
            std::to_string(c.at("shard_index").get<int>()) + " of " + std::to_string(count) +
            ", pass 0, worker 0) with " + std::to_string(c.at("samples_read").get<int>()) +
            " samples read from it, " + std::to_string(kSteps) + " batches of " + std::to_string(batch) +
            " = " + std::to_string(kSteps * batch) + " samples this epoch";
  }
  EXPECT_EQ(p.at("text"), text + "; on rank 0 of 1 (shards source)");
}

}  // namespace
}  // namespace fs::inspect
