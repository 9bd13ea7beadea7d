// readTrainingState against files Python's torch.save wrote
// (make_checkpoints.py): OpenFlamingo train.py's layout after three AdamW
// steps in two groups with a LambdaLR warmup - every figure as torch computes
// it (norms in float64), names mapped from optimizer ids by the group rule;
// parts a file lacks reported absent; a malformed data position an error
// naming the file and entry; the data position sentence exact to its fields.
#include "backend/inspect/training_state.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace fs::inspect {
namespace {

class TrainingStateTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(
        (std::filesystem::temp_directory_path() / ("fs_inspect_state_" + std::to_string(::getpid())))
            .string());
    const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                            "/tests/backend/inspect/make_checkpoints.py " + *dir_ + " > /dev/null";
    ok_ = std::system(cmd.c_str()) == 0;
    if (ok_) {
      std::ifstream in(*dir_ + "/expected.json");
      expected_ = new nlohmann::json(nlohmann::json::parse(in));
    }
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(*dir_, ec);
    delete dir_;
    delete expected_;
  }
  void SetUp() override {
    ASSERT_TRUE(ok_) << "make_checkpoints.py failed (needs " FS_PYTHON
                        " with torch: run scripts/install-deps.sh)";
  }
  static std::string path(const std::string& name) { return *dir_ + "/" + name; }

  static StatusOr<TrainingState> read(const std::string& name) {
    auto ckpt = CheckpointIndex::open(path(name));
    if (!ckpt) return ckpt.status();
    return readTrainingState(ckpt.value());
  }

  static std::string* dir_;
  static nlohmann::json* expected_;
  static bool ok_;
};

std::string* TrainingStateTest::dir_ = nullptr;
nlohmann::json* TrainingStateTest::expected_ = nullptr;
bool TrainingStateTest::ok_ = false;

TEST_F(TrainingStateTest, OpenFlamingoOptimizerAndSchedulerAsTorchHasThem) {
  auto state = read("openflamingo_train.pt");
  ASSERT_TRUE(state.isOk()) << state.status().message();
  const auto& want = expected_->at("state");
  EXPECT_EQ(state->format, CheckpointFormat::kOpenFlamingo);
  EXPECT_EQ(state->epoch, want.at("epoch").get<std::int64_t>());
  ASSERT_TRUE(state->optimizer.has_value());
  const OptimizerState& opt = *state->optimizer;
  EXPECT_EQ(opt.nameSource, "model_state_dict's keys OpenFlamingo trains");  // not the frozen embed key
  ASSERT_EQ(opt.groups.size(), want.at("groups").size());
  for (std::size_t g = 0; g < opt.groups.size(); ++g) {
    const auto& w = want.at("groups")[g];
    EXPECT_EQ(opt.groups[g].index, g);
    EXPECT_DOUBLE_EQ(opt.groups[g].lr, w.at("lr").get<double>());
    EXPECT_DOUBLE_EQ(opt.groups[g].weightDecay, w.at("weight_decay").get<double>());
    EXPECT_DOUBLE_EQ(opt.groups[g].beta1, w.at("betas")[0].get<double>());
    EXPECT_DOUBLE_EQ(opt.groups[g].beta2, w.at("betas")[1].get<double>());
    EXPECT_DOUBLE_EQ(opt.groups[g].eps, w.at("eps").get<double>());
    ASSERT_TRUE(opt.groups[g].initialLr.has_value());
    EXPECT_DOUBLE_EQ(*opt.groups[g].initialLr, w.at("initial_lr").get<double>());
    EXPECT_EQ(opt.groups[g].params, w.at("params").get<std::size_t>());
  }
  ASSERT_EQ(opt.params.size(), want.at("params").size());
  for (std::size_t i = 0; i < opt.params.size(); ++i) {
    const auto& w = want.at("params")[i];
    const OptimizerParamState& p = opt.params[i];
    SCOPED_TRACE(w.at("name").get<std::string>());
    EXPECT_EQ(p.id, w.at("id").get<std::int64_t>());
    EXPECT_EQ(p.name, w.at("name").get<std::string>());
    EXPECT_EQ(p.group, w.at("group").get<std::size_t>());
    EXPECT_EQ(p.step, w.at("step").get<double>());
    ASSERT_TRUE(p.expAvgNorm && p.expAvgSqNorm);
    EXPECT_NEAR(*p.expAvgNorm, w.at("exp_avg_norm").get<double>(), 1e-12 * (1 + *p.expAvgNorm));
    EXPECT_NEAR(*p.expAvgSqNorm, w.at("exp_avg_sq_norm").get<double>(), 1e-12 * (1 + *p.expAvgSqNorm));
    EXPECT_GT(*p.expAvgNorm, 0.0);
  }
  ASSERT_TRUE(state->scheduler.has_value());
  const auto& ws = want.at("scheduler");
  EXPECT_EQ(state->scheduler->lastEpoch, ws.at("last_epoch").get<std::int64_t>());
  EXPECT_EQ(state->scheduler->stepCount, ws.at("_step_count").get<std::int64_t>());
  EXPECT_EQ(state->scheduler->baseLrs, ws.at("base_lrs").get<std::vector<double>>());
  EXPECT_EQ(state->scheduler->lastLr, ws.at("_last_lr").get<std::vector<double>>());
  EXPECT_FALSE(state->resume.has_value());
  EXPECT_EQ(state->absent,
            std::vector<std::string>{"global step, RNG state and data position: not in this checkpoint"});
  const std::string text = formatTrainingState(*state);
  EXPECT_NE(text.find("1 lang_encoder.model.layers.0.gated_cross_attn_layer.ff.1.weight  group 0  step 3"),
            std::string::npos)
      << text;
}

TEST_F(TrainingStateTest, ABareStateDictHasNoTrainingStateAndSaysSo) {
  auto state = read("state_dict.bin");
  ASSERT_TRUE(state.isOk()) << state.status().message();
  EXPECT_FALSE(state->optimizer || state->scheduler || state->resume || state->epoch);
  EXPECT_EQ(state->absent,
            (std::vector<std::string>{"optimizer state: not in this checkpoint",
                                      "LR scheduler state: not in this checkpoint",
                                      "global step, RNG state and data position: not in this checkpoint"}));
}

TEST_F(TrainingStateTest, AMalformedDataPositionNamesTheFileAndEntry) {
  auto ours = read("ours.pt");  // data_position "{}"
  ASSERT_FALSE(ours.isOk());
  EXPECT_NE(ours.status().message().find(
                path("ours.pt") + ": flamingo_studio.data_position: data position: missing required field"),
            std::string::npos)
      << ours.status().message();
}

// The sharded fixture with its resume.data_position replaced by `position`, read back.
StatusOr<TrainingState> readWithPosition(const std::string& dir, const std::string& name,
                                         const nlohmann::json& position) {
  namespace fsys = std::filesystem;
  const fsys::path to = fsys::path(dir) / name;
  fsys::remove_all(to);
  fsys::copy(fsys::path(dir) / "sharded", to, fsys::copy_options::recursive);
  nlohmann::json index;
  {
    std::ifstream in(to / "index.json");
    index = nlohmann::json::parse(in);
  }
  index["resume"]["data_position"] = position.dump();
  std::ofstream(to / "index.json") << index.dump(1);
  auto ckpt = CheckpointIndex::open(to.string());
  if (!ckpt) return ckpt.status();
  return readTrainingState(ckpt.value());
}

nlohmann::json positionWithCursors() {
  return {{"format", 1},
          {"source", "shards"},
          {"epoch", 2},
          {"rank", 0},
          {"world", 1},
          {"datasets", {"laion", "mmc4"}},
          {"batches_consumed", {850, 850}},
          {"batch_sizes", {4, 2}},
          {"rng_state", ""},
          {"cursors",
           {{{"shard", "/data/laion-000012.tar"},
             {"shard_index", 12},
             {"shard_count", 40},
             {"samples_read", 340},
             {"pass", 0},
             {"worker", 1}},
            {{"shard", "/data/mmc4-000003.tar"},
             {"shard_index", 3},
             {"shard_count", 8},
             {"samples_read", 1},
             {"pass", 2},
             {"worker", 0}}}},
          {"a_key_from_a_newer_build", true}};  // ignored, as older builds ignore "cursors"
}

TEST_F(TrainingStateTest, AMalformedShardedDataPositionNamesTheIndexAndEntry) {
  auto sharded = readWithPosition(*dir_, "sharded_empty_position", nlohmann::json::object());
  ASSERT_FALSE(sharded.isOk());
  EXPECT_NE(
      sharded.status().message().find("index.json: resume.data_position: holds a record with a problem: "
                                      "data position: missing required field"),
      std::string::npos)
      << sharded.status().message();
}

TEST_F(TrainingStateTest, ADataPositionsCursorsAreReadAndPutInWords) {
  auto state = readWithPosition(*dir_, "with_cursors", positionWithCursors());
  ASSERT_TRUE(state.isOk()) << state.status().message();
  ASSERT_TRUE(state->resume && state->resume->data);
  const DataPositionInfo& p = *state->resume->data;
  ASSERT_EQ(p.cursors.size(), 2u);
  EXPECT_EQ(p.cursors[0].shard, "/data/laion-000012.tar");
  EXPECT_EQ(p.cursors[0].shardIndex, 12);
  EXPECT_EQ(p.cursors[0].shardCount, 40);
  EXPECT_EQ(p.cursors[0].samplesRead, 340);
  EXPECT_EQ(p.cursors[0].worker, 1);
  EXPECT_EQ(p.cursors[1].pass, 2);
  EXPECT_NE(formatTrainingState(state.value())
                .find("data position: epoch 2: laion at shard /data/laion-000012.tar"),
            std::string::npos)
      << formatTrainingState(state.value());

  auto bad = positionWithCursors();
  bad["cursors"][1]["samples_read"] = -1;
  auto r = readWithPosition(*dir_, "bad_cursor", bad);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("index.json: resume.data_position: holds a record with a problem: data "
                                      "position: cursors[1].samples_read is -1, below 0"),
            std::string::npos)
      << r.status().message();
  bad = positionWithCursors();
  bad["cursors"][0].erase("shard_index");
  r = readWithPosition(*dir_, "bad_cursor", bad);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("missing required field 'cursors[0].shard_index'"), std::string::npos)
      << r.status().message();
  bad = positionWithCursors();
  bad["cursors"].erase(0);
  r = readWithPosition(*dir_, "bad_cursor", bad);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("data position: 1 cursors for 2 datasets"), std::string::npos)
      << r.status().message();
}

TEST(DataPositionText, ExactToTheFields) {
  DataPositionInfo p;
  p.source = "shards";
  p.epoch = 2;
  p.rank = 1;
  p.world = 2;
  p.datasets = {"laion", "mmc4"};
  p.batchesConsumed = {850, 850};
  p.batchSizes = {4, 2};
  EXPECT_EQ(
      describeDataPosition(p),
      "epoch 2: laion 850 batches of 4 = 3,400 samples per rank (6,800 over 2 ranks), "
      "mmc4 850 batches of 2 = 1,700 samples per rank (3,400 over 2 ranks), on rank 1 of 2 (shards source)");
  p.world = 1;
  p.rank = 0;
  p.batchSizes.clear();
  p.batchesConsumed = {1, 1};
  p.rngState.data.assign(16, 0);
  EXPECT_EQ(describeDataPosition(p),
            "epoch 2: laion 1 batch, mmc4 1 batch, on rank 0 of 1 (shards source; batch sizes not recorded; "
            "16 bytes of source RNG state)");
}

TEST(DataPositionText, NamesTheShardWhenThePositionHasCursors) {
  DataPositionInfo p;
  p.source = "shards";
  p.epoch = 2;
  p.rank = 0;
  p.world = 1;
  p.datasets = {"laion", "mmc4"};
  p.batchesConsumed = {850, 850};
  p.batchSizes = {4, 2};
  p.cursors = {{"/data/laion-000012.tar", 12, 40, 340, 0, 1}, {"/data/mmc4-000003.tar", 3, 8, 1, 2, 0}};
  EXPECT_EQ(
      describeDataPosition(p),
      "epoch 2: laion at shard /data/laion-000012.tar (index 12 of 40, pass 0, worker 1) with 340 samples "
      "read from it, 850 batches of 4 = 3,400 samples this epoch; mmc4 at shard /data/mmc4-000003.tar "
      "(index 3 of 8, pass 2, worker 0) with 1 sample read from it, 850 batches of 2 = 1,700 samples "
      "this epoch; on rank 0 of 1 (shards source)");
  p.world = 2;
  p.rank = 1;
  p.batchSizes.clear();
  p.datasets = {"laion"};
  p.batchesConsumed = {1};
  p.cursors.resize(1);
  EXPECT_EQ(
      describeDataPosition(p),
      "epoch 2: laion at shard /data/laion-000012.tar (index 12 of 40, pass 0, worker 1) with 340 samples "
      "read from it, 1 batch this epoch; on rank 1 of 2 (shards source; batch sizes not recorded)");
}

}  // namespace
}  // namespace fs::inspect
