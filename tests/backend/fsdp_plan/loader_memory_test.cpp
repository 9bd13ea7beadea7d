// The planner's loader term (NOTE [Loader memory] in memory_estimate.h)
// against the real shard pipeline: with the CPU memory tracker installed,
// the tensor bytes a ShardSource holds while the step holds its batches and
// every worker has filled its queue are exactly the plan's inputs + loader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "backend/data/shard_source.h"
#include "backend/data/shardgen/synthetic_shards.h"
#include "backend/fsdp_plan/memory_estimate.h"
#include "backend/telemetry/memory_tracker.h"
#include "tests/backend/data/tiny_config.h"

namespace fs::fsdp_plan {
namespace {

namespace fsys = std::filesystem;

class LoaderMemoryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(telemetry::installCpuMemoryTracker().isOk());
    dir_ = new fsys::path(fsys::temp_directory_path() / ("fs_loader_memory_" + std::to_string(::getpid())));
    fsys::remove_all(*dir_);
    data::SyntheticShardOptions o;
    o.outDir = dir_->string();
    o.laionShards = 4;
    o.laionSamplesPerShard = 16;
    o.mmc4Shards = 4;
    o.mmc4DocsPerShard = 16;
    o.imageWidth = 96;
    o.imageHeight = 72;
    o.maxImagesPerDoc = 2;
    auto written = data::writeSyntheticShards(o);
    ASSERT_TRUE(written) << written.status().message();
    shards_ = new data::SyntheticShardsSummary(written.value());
  }
  static void TearDownTestSuite() {
    fsys::remove_all(*dir_);
    delete dir_;
    delete shards_;
  }

  // MMC4 only: its batches are padded to max_tokens, so every batch has the planner's size.
  static protocol::RunConfig mmc4Config(int64_t workers, int64_t prefetch) {
    protocol::RunConfig c = test::tinyConfig();
    c.data.source = "shards";
    c.data.shuffle_buffer = 8;
    c.data.prefetch_batches = prefetch;
    c.data.datasets.erase(c.data.datasets.begin());  // laion
    auto& d = c.data.datasets.front();
    d.shards = shards_->mmc4Shards;
    d.workers = workers;
    d.textsim_threshold = 0.0;
    d.min_num_images = 0;
    d.samples_per_epoch = 64;  // 32 batches of 2: the queues never run dry in the steps below
    c.model.lm.tokenizer_path = shards_->tokenizerDir;
    return c;
  }

  static int64_t live() { return telemetry::memorySnapshot().total.live; }

  // Waits until the tracked bytes reach `want` above `baseline` (the workers fill their queues on
  // their own threads); returns the last value seen.
  static int64_t await(int64_t baseline, int64_t want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    int64_t seen = live() - baseline;
    while (seen != want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      seen = live() - baseline;
    }
    return seen;
  }

  static fsys::path* dir_;
  static data::SyntheticShardsSummary* shards_;
};

fsys::path* LoaderMemoryTest::dir_ = nullptr;
data::SyntheticShardsSummary* LoaderMemoryTest::shards_ = nullptr;

TEST_F(LoaderMemoryTest, WorkersAtFullSpeedHoldWhatThePlanCounts) {
  for (const auto& [workers, prefetch] : {std::pair<int64_t, int64_t>{1, 2}, {2, 2}, {2, 3}}) {
    SCOPED_TRACE("workers " + std::to_string(workers) + ", prefetch " + std::to_string(prefetch));
    const auto config = mmc4Config(workers, prefetch);
    const auto activations = estimateActivations(config, Dtype::kFloat32);
    ASSERT_EQ(activations.datasets.size(), 1u);
    const int64_t inputs = activations.datasets[0].paths.front().inputs;
    const int64_t loader = loaderBytes(config, activations);
    // The formula by hand: 2 x 2 pictures of 3 x 32 x 32 floats; ids and mask of 2 x 48 int64.
    const int64_t images = 2 * 2 * 3 * 32 * 32 * 4, ids = 2 * 2 * 48 * 8;
    ASSERT_EQ(inputs, images + ids);
    ASSERT_EQ(loader, images * (workers * (prefetch + 3) - 1) + ids * workers * (prefetch + 1));

    auto tokenizer = data::loadTokenizer(shards_->tokenizerDir, "opt");
    ASSERT_TRUE(tokenizer) << tokenizer.status().message();
    const int64_t baseline = live();
    {
      auto source = data::ShardSource::create(config, 0, 1, std::move(tokenizer.value()));
      ASSERT_TRUE(source) << source.status().message();
      // Step k takes worker (k - 1) mod workers's batch and holds it while the workers fill up: a worker
      // that had a batch held keeps prefetch + 3 image tensors, one that never had prefetch + 2. The step
      // lets go of its batches before the next one is taken, as the trainer does.
      std::optional<data::StepBatches> held;
      for (int64_t k = 1; k <= workers + 1; ++k) {
        held.reset();
        auto next = (*source)->next();
        ASSERT_TRUE(next && next.value()) << next.status().message();
        held = std::move(*next.value());
        const int64_t hadHeld = std::min(k, workers);
        const int64_t want =
            images * (workers * (prefetch + 2) + hadHeld) + ids * (workers * (prefetch + 1) + 1);
        EXPECT_EQ(await(baseline, want), want) << "step " << k;
      }
      // Every worker has had a batch held: what the plan counts.
      EXPECT_EQ(live() - baseline, inputs + loader);
    }
    EXPECT_EQ(live(), baseline) << "the source freed what it held";
  }
}

// The synthetic source builds each batch inside the step: nothing beyond the step's own.
TEST_F(LoaderMemoryTest, SyntheticBatchesHoldNothingAhead) {
  protocol::RunConfig c = test::tinyConfig();
  EXPECT_EQ(loaderBytes(c, estimateActivations(c, Dtype::kFloat32)), 0);
}

}  // namespace
}  // namespace fs::fsdp_plan
