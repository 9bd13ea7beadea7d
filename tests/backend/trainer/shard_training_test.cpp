// The engine trains end to end on real shards: the tiny preset's "generated"
// source (shards and tokenizer written into the run directory), validation
// on held-out shards every N steps, data_stats telemetry, and exact resume of
// the shard stream across a stop (its checkpoints' data positions, shard
// cursors included, are the uninterrupted run's).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/data/shardgen/synthetic_shards.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/telemetry/stop_signals.h"
#include "backend/trainer/trainer.h"
#include "engine_test_util.h"

namespace fs::trainer {
namespace {

namespace fsys = std::filesystem;

// The preset as shipped: data.source generated.
protocol::RunConfig generatedTiny(const std::vector<std::string>& sets) {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml");
  EXPECT_TRUE(load.ok());
  EXPECT_EQ(load.config.data.source, "generated");
  auto problems = protocol::applyOverrides(&load.config, sets);
  EXPECT_TRUE(problems.empty()) << protocol::formatProblems(problems);
  return load.config;
}

class ShardTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fsys::temp_directory_path() / ("fs_shard_training_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fsys::remove_all(root_);
    fsys::create_directories(root_);
    telemetry::clearStopRequests();
  }
  void TearDown() override { fsys::remove_all(root_); }
  fsys::path root_;
};

TEST_F(ShardTrainingTest, TrainsOnGeneratedShardsAndValidates) {
  data::SyntheticShardOptions held;
  held.outDir = (root_ / "held-out").string();
  held.laionShards = 1;
  held.laionSamplesPerShard = 16;
  held.mmc4Shards = 1;
  held.mmc4DocsPerShard = 16;
  held.imageWidth = 64;
  held.imageHeight = 48;
  held.seed = 99;
  auto val = data::writeSyntheticShards(held);
  ASSERT_TRUE(val) << val.status().message();

  const auto dir = root_ / "run";
  auto config = generatedTiny({"optim.epochs=1", "data.val_every_steps=4", "data.val_batches=2",
                               "data.datasets.laion.val_shards=" + val->laionShards});
  auto outcome = runTraining(config, dir, TrainerOptions{});
  ASSERT_TRUE(outcome) << outcome.status().message();
  EXPECT_EQ(outcome.value(), TrainOutcome::kFinished);
  EXPECT_TRUE(fsys::exists(dir / "generated-data/rank0/tokenizer/vocab.json"));

  int steps = 0, validations = 0, dataStats = 0;
  for (const auto& e : test::readEvents(dir, true)) {
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) {
      ++steps;
      for (const auto& [name, l] : s->loss) EXPECT_TRUE(std::isfinite(l) && l > 0) << name;
    }
    if (const auto* v = std::get_if<protocol::ValidationEvent>(&e.body)) {
      ++validations;
      EXPECT_EQ(v->step % 4, 0);
      ASSERT_EQ(v->loss.size(), 1u);  // only laion has val_shards
      EXPECT_TRUE(std::isfinite(v->loss.at("laion")) && v->loss.at("laion") > 0);
    }
    if (const auto* d = std::get_if<protocol::DataStatsEvent>(&e.body)) {
      ++dataStats;
      EXPECT_GT(d->accepted.at("mmc4"), 0);
      EXPECT_TRUE(d->dropped.count("mmc4"));  // MMC4's rules filter some documents
    }
  }
  EXPECT_EQ(steps, 16);
  EXPECT_EQ(validations, 4);
  EXPECT_GT(dataStats, 0);
}

TEST_F(ShardTrainingTest, ResumedRunSeesTheSameBatchesAsAnUninterruptedOne) {
  // A small shuffle buffer releases samples while shards are read, so checkpoints stand mid-shard.
  const auto sets =
      std::vector<std::string>{"optim.epochs=1", "checkpoint.every_steps=5", "data.shuffle_buffer=8"};
  const auto full = root_ / "full";
  ASSERT_TRUE(runTraining(generatedTiny(sets), full, TrainerOptions{}));
  const auto part = root_ / "part";
  TrainerOptions stopEarly;
  stopEarly.maxIterations = 5;
  ASSERT_TRUE(runTraining(generatedTiny(sets), part, stopEarly));
  ASSERT_TRUE(runTraining(generatedTiny(sets), part, TrainerOptions{}));  // resumes from step 5
  std::map<int64_t, std::map<std::string, double>> a, b;
  for (const auto& e : test::readEvents(full, true)) {
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) a[s->step] = s->loss;
  }
  for (const auto& e : test::readEvents(part, true)) {
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) b[s->step] = s->loss;
  }
  ASSERT_EQ(a.size(), 16u);
  for (int64_t step = 6; step <= 16; ++step) {
    ASSERT_TRUE(b.count(step)) << step;
    for (const auto& [name, l] : a[step])
      EXPECT_NEAR(b[step][name], l, 1e-5 * std::max(1.0, l)) << name << " " << step;
  }
  // The step checkpoints written after the resume hold the uninterrupted run's data positions, shard
  // cursors included (the shards are each run's own generated copies: compared by file name).
  for (int step : {10, 15}) {
    SCOPED_TRACE(step);
    const std::string file = "checkpoint_step" + std::to_string(step) + ".pt";
    auto x = checkpoint::readCheckpoint(full / file);
    auto y = checkpoint::readCheckpoint(part / file);
    ASSERT_TRUE(x) << x.status().message();
    ASSERT_TRUE(y) << y.status().message();
    data::DataPosition px = x->resume.data, py = y->resume.data;
    ASSERT_EQ(px.cursors.size(), 2u);
    for (auto* p : {&px, &py}) {
      for (auto& c : p->cursors) c.shard = fsys::path(c.shard).filename().string();
    }
    EXPECT_EQ(px.cursors[0].shard.rfind("laion-", 0), 0u) << px.cursors[0].shard;
    EXPECT_GT(px.cursors[0].samplesRead, 0);
    EXPECT_EQ(px, py);
  }
}

}  // namespace
}  // namespace fs::trainer
