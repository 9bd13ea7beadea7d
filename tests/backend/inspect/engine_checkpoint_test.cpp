// CheckpointIndex on the checkpoints a real flamingo-train writes: a 2-rank FSDP
// run with checkpoint.format: sharded (started once for the suite), its epoch
// checkpoint consolidated by `flamingo-train checkpoint consolidate` (the
// engine's own LibTorch reader) into a full file. The sharded directory, read
// by our index alone, holds every tensor of the consolidated file under the
// same name, shape and dtype, byte for byte; every manifest hash of the full
// file matches, and a flipped byte is found and named. `checkpoint state` reads
// the same training state from both, and `check` finds both loadable.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/fsdp_plan/param_inventory.h"
#include "backend/inspect/checkpoint_check.h"
#include "backend/inspect/checkpoint_diff.h"
#include "backend/inspect/checkpoint_index.h"
#include "backend/inspect/hash_check.h"
#include "backend/inspect/training_state.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/state_keys/flamingo_keys.h"

namespace fs::inspect {
namespace {

namespace fsys = std::filesystem;

// Runs argv; its exit status (-1 when it did not start or was killed).
int run(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (std::freopen(log.c_str(), "w", stdout) == nullptr ||
        std::freopen(log.c_str(), "a", stderr) == nullptr)
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

int freePort() {
  return 21000 + static_cast<int>(::getpid() % 4000) * 2;
}

class EngineCheckpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fsys::path(fsys::temp_directory_path() / ("fs_inspect_engine_" + std::to_string(::getpid())));
    fsys::remove_all(*dir_);
    fsys::create_directories(*dir_);
    const fsys::path runDir = *dir_ / "run";
    std::vector<std::string> argv = {FS_TEST_FLAMINGO_TRAIN,
                                     "launch",
                                     "--nproc-per-node",
                                     "2",
                                     "--master-port",
                                     std::to_string(freePort()),
                                     "--run-dir",
                                     runDir.string(),
                                     "--",
                                     "train",
                                     "--config",
                                     std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml"};
    for (const char* s :
         {"data.source=synthetic", "model.lm.family=llama", "optim.epochs=1", "data.datasets[0].batch_size=2",
          "data.datasets[0].samples_per_epoch=8", "data.datasets[1].batch_size=2",
          "data.datasets[1].samples_per_epoch=8", "launch.threads_per_rank=1", "parallel.mode=fsdp",
          "checkpoint.format=sharded", "checkpoint.every_steps=1", "checkpoint.keep_last=5",
          "parallel.collective_timeout_s=60", "parallel.preflight_timeout_s=60"}) {
      argv.push_back("--set");
      argv.push_back(s);
    }
    const std::string log = (*dir_ / "train.log").string();
    if (run(argv, log) != 0) {
      *error_ = "flamingo-train launch failed: " + slurp(log);
      return;
    }
    sharded_ = new fsys::path(runDir / "checkpoint_0.pt");
    full_ = new fsys::path(*dir_ / "consolidated.pt");
    const std::string log2 = (*dir_ / "consolidate.log").string();
    if (run({FS_TEST_FLAMINGO_TRAIN, "checkpoint", "consolidate", sharded_->string(), full_->string()},
            log2) != 0)
      *error_ = "flamingo-train checkpoint consolidate failed: " + slurp(log2);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fsys::remove_all(*dir_, ec);
  }
  void SetUp() override { ASSERT_TRUE(error_->empty()) << *error_; }

  static fsys::path* dir_;
  static fsys::path* sharded_;
  static fsys::path* full_;
  static std::string* error_;
};

fsys::path* EngineCheckpointTest::dir_ = nullptr;
fsys::path* EngineCheckpointTest::sharded_ = nullptr;
fsys::path* EngineCheckpointTest::full_ = nullptr;
std::string* EngineCheckpointTest::error_ = new std::string;

std::vector<std::byte> packed(const TensorData& d) {
  return tensorfile::toContiguous(d.view);
}

TEST_F(EngineCheckpointTest, ShardedDirectoryHoldsWhatTheEngineConsolidates) {
  auto sharded = CheckpointIndex::open(sharded_->string());
  ASSERT_TRUE(sharded.isOk()) << sharded.status().message();
  auto full = CheckpointIndex::open(full_->string());
  ASSERT_TRUE(full.isOk()) << full.status().message();
  EXPECT_EQ(sharded->format(), CheckpointFormat::kFlamingoStudioSharded);
  EXPECT_EQ(full->format(), CheckpointFormat::kFlamingoStudio);
  std::size_t compared = 0;
  for (std::size_t i = 0; i < full->tensors().size(); ++i) {
    const TensorEntry& f = full->tensors()[i];
    if (f.section == Section::kOther) continue;  // our resume state (RNG bytes): not in the rank files
    if (f.section == Section::kOptimizer && f.name.ends_with(".step"))
      continue;  // one per flat, not per member
    SCOPED_TRACE(std::string(sectionName(f.section)) + " " + f.name);
    auto j = sharded->find(f.name, f.section);
    ASSERT_TRUE(j.has_value()) << "not in the sharded index";
    const TensorEntry& s = sharded->tensors()[*j];
    EXPECT_EQ(s.shape, f.shape);
    EXPECT_EQ(s.dtype, f.dtype);
    auto a = full->data(i);
    auto b = sharded->data(*j);
    ASSERT_TRUE(a.isOk()) << a.status().message();
    ASSERT_TRUE(b.isOk()) << b.status().message();
    EXPECT_TRUE(packed(a.value()) == packed(b.value())) << "elements differ";
    ++compared;
  }
  EXPECT_GT(compared, 10u);
}

TEST_F(EngineCheckpointTest, ManifestHashesOfTheFullFileMatchAndAFlippedByteIsNamed) {
  auto full = CheckpointIndex::open(full_->string());
  ASSERT_TRUE(full.isOk()) << full.status().message();
  std::uint64_t lastDone = 0, total = 0;
  HashCheckOptions options;
  options.progress = [&](std::uint64_t done, std::uint64_t all) {
    EXPECT_GE(done, lastDone);
    lastDone = done;
    total = all;
  };
  auto report = checkManifestHashes(full.value(), options);
  ASSERT_TRUE(report.isOk()) << report.status().message();
  EXPECT_GT(report->matching, 10u);
  EXPECT_EQ(report->differing, 0u);
  EXPECT_EQ(lastDone, total);
  for (const auto& t : full->tensors()) {
    if (t.section == Section::kModel) {
      EXPECT_FALSE(t.manifestHash.empty()) << t.name;
      EXPECT_TRUE(t.trainable.has_value()) << t.name;
    }
  }

  // Flip one byte inside the first model tensor with a hash, in a copy of the file.
  std::size_t victim = 0;
  while (full->tensors()[victim].manifestHash.empty() || full->tensors()[victim].bytes == 0) ++victim;
  const auto* stateDict = full->root()->find("model_state_dict");
  ASSERT_NE(stateDict, nullptr);
  const auto* value = stateDict->find(full->tensors()[victim].name);
  ASSERT_TRUE(value != nullptr && value->isTensor());
  const tensorfile::TensorRef& ref = *value->tensor;
  const auto offset = static_cast<std::size_t>(ref.storageFileOffset) +
                      static_cast<std::size_t>(ref.storageOffset) * tensorfile::itemSize(ref.dtype);
  const fsys::path damaged = *dir_ / "damaged.pt";
  fsys::copy_file(*full_, damaged, fsys::copy_options::overwrite_existing);
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x10);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(&c, 1);
  }
  auto bad = CheckpointIndex::open(damaged.string());
  ASSERT_TRUE(bad.isOk()) << bad.status().message();  // the index reads: only tensor bytes changed
  auto badReport = checkManifestHashes(bad.value());
  ASSERT_TRUE(badReport.isOk());
  EXPECT_EQ(badReport->differing, 1u);
  ASSERT_EQ(badReport->differ.size(), 1u);
  EXPECT_EQ(badReport->differ.front(), full->tensors()[victim].name);
}

// What a run trains, seen by the diff: from the step-1 checkpoint to the epoch's,
// every tensor that moved is trainable, and the input embedding moved only in the
// rows of the tokens the model adds (OpenFlamingo's gradient mask).
TEST_F(EngineCheckpointTest, DiffShowsOnlyTrainableTensorsAndTheAddedTokenRowsMoved) {
  auto before = CheckpointIndex::open((sharded_->parent_path() / "checkpoint_step1.pt").string());
  ASSERT_TRUE(before.isOk()) << before.status().message();
  auto after = CheckpointIndex::open(sharded_->string());
  ASSERT_TRUE(after.isOk()) << after.status().message();
  auto report = diffCheckpoints(before.value(), after.value());
  ASSERT_TRUE(report.isOk()) << report.status().message();
  EXPECT_GT(report->changed, 0u);
  EXPECT_EQ(report->added + report->removed + report->misShaped, 0u);
  ASSERT_TRUE(after->manifest().has_value());
  std::vector<std::int64_t> added;
  for (const auto& [token, id] : after->manifest()->addedTokens) added.push_back(id);
  std::sort(added.begin(), added.end());
  bool sawEmbedding = false;
  for (const TensorDiff& d : report->tensors) {
    const auto i = after->find(d.name);
    ASSERT_TRUE(i.has_value()) << d.name;
    const TensorEntry& t = after->tensors()[*i];
    if (d.kind == DiffKind::kChanged) {
      EXPECT_EQ(t.trainable, std::optional<bool>(true)) << d.name << " moved but is not trainable";
    }
    if (d.name.ends_with("embed_tokens.weight")) {
      sawEmbedding = true;
      EXPECT_EQ(d.kind, DiffKind::kChanged);
      EXPECT_EQ(d.changedRows, added) << d.name;
    }
  }
  EXPECT_TRUE(sawEmbedding);
}

// The training state of the sharded directory (index.json's groups with param_names,
// moments gathered from two rank files, the step from the rank files) equals that of
// the engine's consolidated file (names from its manifest by the group rule), figure
// for figure; the data position is the 2-rank run's.
TEST_F(EngineCheckpointTest, TrainingStateOfTheShardedDirectoryEqualsTheConsolidatedFiles) {
  auto sharded = CheckpointIndex::open(sharded_->string());
  ASSERT_TRUE(sharded.isOk()) << sharded.status().message();
  auto full = CheckpointIndex::open(full_->string());
  ASSERT_TRUE(full.isOk()) << full.status().message();
  auto a = readTrainingState(sharded.value());
  ASSERT_TRUE(a.isOk()) << a.status().message();
  auto b = readTrainingState(full.value());
  ASSERT_TRUE(b.isOk()) << b.status().message();
  ASSERT_TRUE(a->optimizer && b->optimizer && a->scheduler && b->scheduler && a->resume && b->resume);
  EXPECT_EQ(a->optimizer->nameSource, "the sharded index's param_names");
  EXPECT_EQ(b->optimizer->nameSource, "the manifest's trainable parameters");
  ASSERT_EQ(a->optimizer->groups.size(), b->optimizer->groups.size());
  for (std::size_t g = 0; g < a->optimizer->groups.size(); ++g) {
    EXPECT_EQ(a->optimizer->groups[g].params, b->optimizer->groups[g].params);
    EXPECT_EQ(a->optimizer->groups[g].lr, b->optimizer->groups[g].lr);
    EXPECT_EQ(a->optimizer->groups[g].weightDecay, b->optimizer->groups[g].weightDecay);
  }
  ASSERT_EQ(a->optimizer->params.size(), b->optimizer->params.size());
  ASSERT_GT(a->optimizer->params.size(), 10u);
  for (std::size_t i = 0; i < a->optimizer->params.size(); ++i) {
    const OptimizerParamState& x = a->optimizer->params[i];
    const OptimizerParamState& y = b->optimizer->params[i];
    SCOPED_TRACE(y.name);
    EXPECT_EQ(x.id, y.id);
    EXPECT_FALSE(x.name.empty());
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.group, y.group);
    EXPECT_EQ(x.step, y.step);
    EXPECT_EQ(x.shape, y.shape);
    EXPECT_EQ(x.expAvgNorm, y.expAvgNorm);
    EXPECT_EQ(x.expAvgSqNorm, y.expAvgSqNorm);
  }
  EXPECT_EQ(a->scheduler->lastEpoch, b->scheduler->lastEpoch);
  EXPECT_EQ(a->scheduler->lastLr, b->scheduler->lastLr);
  EXPECT_EQ(a->resume->step, b->resume->step);
  ASSERT_EQ(a->resume->rng.size(), b->resume->rng.size());
  for (std::size_t g = 0; g < a->resume->rng.size(); ++g)
    EXPECT_EQ(a->resume->rng[g].hash, b->resume->rng[g].hash);
  ASSERT_TRUE(a->resume->data && b->resume->data);
  EXPECT_EQ(describeDataPosition(*a->resume->data), describeDataPosition(*b->resume->data));
  // Batch size 2 per rank, 8 samples an epoch over 2 ranks: 2 steps an epoch.
  auto step1 = CheckpointIndex::open((sharded_->parent_path() / "checkpoint_step1.pt").string());
  ASSERT_TRUE(step1.isOk()) << step1.status().message();
  auto s1 = readTrainingState(step1.value());
  ASSERT_TRUE(s1.isOk()) << s1.status().message();
  ASSERT_TRUE(s1->resume && s1->resume->data);
  EXPECT_EQ(describeDataPosition(*s1->resume->data),
            "epoch 0: laion 1 batch of 2 = 2 samples per rank (4 over 2 ranks), "
            "mmc4 1 batch of 2 = 2 samples per rank (4 over 2 ranks), on rank 0 of 2 (synthetic source)");
}

// checkpoint check's classification on the run's own checkpoints, against its
// config.yaml: the sharded directory and the consolidated file both load.
TEST_F(EngineCheckpointTest, BothCheckpointsCheckOkAgainstTheRunsConfig) {
  const auto load = protocol::loadConfigFile((sharded_->parent_path() / "config.yaml").string());
  ASSERT_TRUE(load.ok());
  auto inventory = fsdp_plan::buildParamInventory(load.config.model);
  ASSERT_TRUE(inventory.isOk()) << inventory.status().message();
  auto layout = state_keys::lmKeyLayout(load.config.model.lm.family, load.config.model.lm.tied_head);
  ASSERT_TRUE(layout.isOk());
  std::vector<OurParameter> ours;
  for (const auto& p : inventory->params) ours.push_back({p.name, p.shape, p.trainable});
  auto sharded = CheckpointIndex::open(sharded_->string());
  ASSERT_TRUE(sharded.isOk()) << sharded.status().message();
  auto full = CheckpointIndex::open(full_->string());
  ASSERT_TRUE(full.isOk()) << full.status().message();
  const auto a = checkCheckpointKeys(sharded.value(), ours, state_keys::flamingoKeyMapper(layout.value()));
  const auto b = checkCheckpointKeys(full.value(), ours, state_keys::flamingoKeyMapper(layout.value()));
  EXPECT_TRUE(a.ok()) << a.summary();
  EXPECT_TRUE(b.ok()) << b.summary();
  // The sharded directory holds every parameter (frozen flats too); the full
  // file leaves frozen ones out, as OpenFlamingo's does: expected-frozen there.
  EXPECT_EQ(a.loaded.size(), ours.size()) << a.summary();
  EXPECT_FALSE(b.expectedFrozen.empty()) << b.summary();
  EXPECT_EQ(b.loaded.size() + b.expectedFrozen.size(), ours.size()) << b.summary();
  for (const auto& name : b.loaded)
    EXPECT_NE(std::find(a.loaded.begin(), a.loaded.end(), name), a.loaded.end()) << name;
}

}  // namespace
}  // namespace fs::inspect
