// Issue 42 item 1: data.source generated reads the shards it wrote as files,
// never as a shard spec. The run directory (from name / run_root) once became
// a brace pattern, so "x::pipe:touch CANARY;" in it ran touch on every rank;
// and on a restart the patterns were read back from
// generated-data/rank<r>/complete. Both routes are tried here with a canary
// file that a command would create (NOTE [Run directory text] in
// backend/protocol/config/run_location.h).
#include "backend/trainer/generated_data.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "backend/trainer/data_sources.h"
#include "tests/backend/trainer/engine_test_util.h"

namespace fs::trainer {
namespace {

namespace fsys = std::filesystem;

class GeneratedDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fsys::temp_directory_path() / ("fs_generated_data_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fsys::remove_all(root_);
    fsys::create_directories(root_);
  }
  void TearDown() override { fsys::remove_all(root_); }

  // One step's batches through makeDataSources (the trainer's path); the source
  // is destroyed before returning, which stops (and reaps) anything it started.
  static protocol::Status readOneStep(const fsys::path& runDir) {
    const auto config = test::tinyConfig({"data.source=generated", "data.stall_timeout_s=30"});
    auto sources = makeDataSources(config, runDir, 0, 1, nullptr);
    if (!sources) return sources.status();
    auto& train = *sources.value().train;
    train.setEpoch(0);
    auto batch = train.next();
    if (!batch) return batch.status();
    if (!batch.value()) return protocol::Status::ioError("no batch");
    return protocol::Status::ok();
  }

  fsys::path root_;
};

TEST_F(GeneratedDataTest, Issue42RunDirectoryIsNotAShardSpec) {
  const fsys::path canary = root_ / "CANARY";
  // As "<run_root>/<name>" with name "x::pipe:touch <canary>;".
  const fsys::path runDir = root_.string() + "/x::pipe:touch " + canary.string() + ";";
  const protocol::Status read = readOneStep(runDir);
  EXPECT_FALSE(fsys::exists(canary)) << "a command in the run directory's name ran";
  EXPECT_TRUE(read.isOk()) << read.message();
}

TEST_F(GeneratedDataTest, Issue42MarkerIsNotReadBackAsPatterns) {
  const fsys::path runDir = root_ / "run";
  ASSERT_TRUE(readOneStep(runDir).isOk());  // writes the shards and the marker
  const fsys::path rankDir = runDir / "generated-data" / "rank0";
  // A marker in the old format (three words: laion pattern, mmc4 pattern,
  // tokenizer), edited to name commands: one per shard a worker needs.
  const fsys::path canary = root_ / "CANARY";
  std::string pipes;
  for (int i = 0; i < 8; ++i) pipes += (i ? "::" : "") + ("pipe:touch$IFS" + canary.string());
  {
    std::ofstream marker(rankDir / "complete", std::ios::trunc);
    marker << pipes << "\n" << pipes << "\n" << (rankDir / "tokenizer").string() << "\n";
  }
  const protocol::Status read = readOneStep(runDir);
  EXPECT_FALSE(fsys::exists(canary)) << "a command from generated-data/rank0/complete ran";
  EXPECT_TRUE(read.isOk()) << read.message();
}

TEST_F(GeneratedDataTest, CompleteCopyIsReusedAndListedAsFiles) {
  const fsys::path runDir = root_ / "run with spaces";
  const auto config = test::tinyConfig({"data.source=generated"});
  auto first = prepareGeneratedData(config, runDir, 0, 1);
  ASSERT_TRUE(first.isOk()) << first.status().message();
  ASSERT_EQ(first->shardFiles.size(), config.data.datasets.size());
  for (size_t i = 0; i < first->shardFiles.size(); ++i) {
    EXPECT_TRUE(first->config.data.datasets[i].shards.empty());
    ASSERT_FALSE(first->shardFiles[i].empty());
    for (const auto& f : first->shardFiles[i]) EXPECT_TRUE(fsys::is_regular_file(f)) << f;
  }
  const auto shard = first->shardFiles[0][0];
  const auto written = fsys::last_write_time(shard);
  auto again = prepareGeneratedData(config, runDir, 0, 1);  // a resumed run: nothing rewritten
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_EQ(again->shardFiles, first->shardFiles);
  EXPECT_EQ(fsys::last_write_time(shard), written);
  EXPECT_EQ(again->config.model.lm.tokenizer_path, first->config.model.lm.tokenizer_path);
}

std::string fileBytes(const fsys::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Issue 44 item 4: the config's dataset list drives what is written. LAION alone gets the tokenizer both
// kinds give (trained on captions alone it fell short of model.lm.vocab_size, and the run was refused);
// a third dataset gets shards of its own, not LAION's read twice.
TEST_F(GeneratedDataTest, EveryDatasetGetsItsOwnShardsAndOneTokenizer) {
  const auto two = prepareGeneratedData(test::tinyConfig({"data.source=generated"}), root_ / "two", 0, 1);
  const auto one = prepareGeneratedData(test::tinyConfig({"data.source=generated", "data.datasets=laion"}),
                                        root_ / "one", 0, 1);
  const auto three = prepareGeneratedData(
      test::tinyConfig({"data.source=generated", "data.datasets[2].name=cc3m",
                        "data.datasets.cc3m.batch_size=2", "data.datasets.cc3m.samples_per_epoch=32"}),
      root_ / "three", 0, 1);
  ASSERT_TRUE(two.isOk() && one.isOk() && three.isOk());
  for (const char* f : {"vocab.json", "merges.txt"}) {
    const auto tokenizer = fileBytes(fsys::path(two->config.model.lm.tokenizer_path) / f);
    EXPECT_FALSE(tokenizer.empty()) << f;
    EXPECT_EQ(fileBytes(fsys::path(one->config.model.lm.tokenizer_path) / f), tokenizer) << f;
    EXPECT_EQ(fileBytes(fsys::path(three->config.model.lm.tokenizer_path) / f), tokenizer) << f;
  }
  ASSERT_EQ(one->shardFiles.size(), 1u);
  EXPECT_EQ(fileBytes(one->shardFiles[0][0]), fileBytes(two->shardFiles[0][0])) << "LAION's shards as before";
  ASSERT_EQ(three->shardFiles.size(), 3u);
  const fsys::path rankDir = root_ / "three" / "generated-data" / "rank0";
  EXPECT_EQ(fsys::path(three->shardFiles[2][0]), rankDir / "extra2" / "laion-000000.tar");
  EXPECT_FALSE(fsys::exists(rankDir / "extra2" / "tokenizer")) << "one tokenizer per run";
  EXPECT_NE(fileBytes(three->shardFiles[2][0]), fileBytes(three->shardFiles[0][0]))
      << "cc3m reads samples of its own";
}

}  // namespace
}  // namespace fs::trainer
