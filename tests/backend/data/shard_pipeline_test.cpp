// The shard pipeline end to end on real tar shards written by
// make-synthetic: batch shapes and token layout, determinism, exact resume,
// rank/worker splits, and broken data counted, skipped and, past the
// threshold, stopping the run.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <torch/torch.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "backend/data/documents/base64.h"
#include "backend/data/sample_shuffle.h"
#include "backend/data/shard_plan.h"
#include "backend/data/shard_source.h"
#include "backend/data/shardgen/synthetic_shards.h"
#include "backend/data/shards/tar_samples.h"
#include "backend/data/shards/tar_writer.h"
#include "tests/backend/data/tiny_config.h"

namespace fs::data {
namespace {

namespace fsys = std::filesystem;

}  // namespace

// For readable failures.
void PrintTo(const ShardCursor& c, std::ostream* os) {
  *os << c.shard << " [" << c.shardIndex << " of " << c.shardCount << "] samples " << c.samplesRead
      << " pass " << c.pass << " worker " << c.worker;
}

namespace {

class ShardPipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fsys::path(fsys::temp_directory_path() / ("fs_shard_pipeline_" + std::to_string(::getpid())));
    fsys::remove_all(*dir_);
    SyntheticShardOptions o;
    o.outDir = (*dir_ / "good").string();
    o.laionShards = 4;
    o.laionSamplesPerShard = 24;
    o.mmc4Shards = 4;
    o.mmc4DocsPerShard = 16;
    o.imageWidth = 96;
    o.imageHeight = 72;
    o.maxImagesPerDoc = 2;
    auto sum = writeSyntheticShards(o);
    ASSERT_TRUE(sum) << sum.status().message();
    good_ = new SyntheticShardsSummary(sum.value());
  }
  static void TearDownTestSuite() {
    fsys::remove_all(*dir_);
    delete dir_;
    delete good_;
  }

  static std::shared_ptr<const Tokenizer> tokenizer() {
    auto tok = loadTokenizer(good_->tokenizerDir, "opt");
    EXPECT_TRUE(tok) << tok.status().message();
    return std::shared_ptr<const Tokenizer>(std::move(tok.value()));
  }

  static protocol::RunConfig config() {
    protocol::RunConfig c = test::tinyConfig();
    c.data.source = "shards";
    c.data.shuffle_buffer = 20;
    c.data.datasets[0].shards = good_->laionShards;
    c.data.datasets[1].shards = good_->mmc4Shards;
    c.data.datasets[1].textsim_threshold = 0.24;
    c.model.lm.tokenizer_path = good_->tokenizerDir;
    return c;
  }

  static std::unique_ptr<ShardSource> source(const protocol::RunConfig& c, int64_t rank = 0,
                                             int64_t world = 1) {
    auto s = ShardSource::create(c, rank, world, tokenizer());
    EXPECT_TRUE(s) << s.status().message();
    return s ? std::move(s.value()) : nullptr;
  }

  static std::vector<StepBatches> drain(DataSource& s, int64_t limit = 1 << 30) {
    std::vector<StepBatches> out;
    while (static_cast<int64_t>(out.size()) < limit) {
      auto b = s.next();
      EXPECT_TRUE(b) << b.status().message();
      if (!b || !b.value()) break;
      out.push_back(std::move(*b.value()));
    }
    return out;
  }

  static void expectSame(const StepBatches& a, const StepBatches& b) {
    ASSERT_EQ(a.batches.size(), b.batches.size());
    for (size_t i = 0; i < a.batches.size(); ++i) {
      EXPECT_TRUE(torch::equal(a.batches[i].inputIds, b.batches[i].inputIds)) << a.batches[i].dataset;
      EXPECT_TRUE(torch::equal(a.batches[i].images, b.batches[i].images)) << a.batches[i].dataset;
      EXPECT_TRUE(torch::equal(a.batches[i].attentionMask, b.batches[i].attentionMask));
    }
  }

  static fsys::path* dir_;
  static SyntheticShardsSummary* good_;
};

fsys::path* ShardPipelineTest::dir_ = nullptr;
SyntheticShardsSummary* ShardPipelineTest::good_ = nullptr;

TEST_F(ShardPipelineTest, GeneratedTokenizerMatchesTheTinyPresetIds) {
  auto tok = tokenizer();
  const auto tokens = test::tinyConfig().model.tokens;
  EXPECT_EQ(tok->size(), tokens.vocab_size);
  EXPECT_EQ(tok->eosId(), tokens.eos_id);
  EXPECT_EQ(tok->padId(), tokens.pad_id);
  EXPECT_EQ(tok->imageId(), tokens.image_id);
  EXPECT_EQ(tok->endofchunkId(), tokens.endofchunk_id);
  EXPECT_EQ(tok->bosId(), std::optional<int64_t>(2));  // OPT prepends </s>
}

TEST_F(ShardPipelineTest, BatchesHaveOpenFlamingoShapesAndLayout) {
  auto c = config();
  auto s = source(c);
  ASSERT_TRUE(s);
  const auto steps = drain(*s);
  ASSERT_EQ(static_cast<int64_t>(steps.size()), s->stepsPerEpoch());
  const auto tokens = c.model.tokens;
  for (const auto& step : steps) {
    for (const auto& b : step.batches) {
      ASSERT_TRUE(checkBatch(b)) << checkBatch(b).message();
      if (b.kind == DatasetKind::kLaion) {
        EXPECT_EQ(b.images.sizes(), torch::IntArrayRef({4, 1, 1, 3, 32, 32}));
        EXPECT_LE(b.inputIds.size(1), 16);
        for (int64_t r = 0; r < 4; ++r) {
          EXPECT_EQ(b.inputIds[r][0].item<int64_t>(), tokens.eos_id);  // BOS
          EXPECT_EQ(b.inputIds[r][1].item<int64_t>(), tokens.image_id);
        }
      } else {
        EXPECT_EQ(b.images.sizes(), torch::IntArrayRef({2, 2, 1, 3, 32, 32}));
        EXPECT_EQ(b.inputIds.size(1), 48);
        EXPECT_GE((b.inputIds == tokens.image_id).sum().item<int64_t>(), 2);  // >= 1 image per document
      }
      EXPECT_TRUE(torch::isfinite(b.images).all().item<bool>());
    }
  }
  const auto counts = s->dropCounts();
  EXPECT_EQ(counts.at("laion").dropped, 0);
  EXPECT_EQ(counts.at("mmc4").dropped, 0);
  EXPECT_GT(counts.at("mmc4").filtered, 0);  // the single-image coin alone sees to that
}

TEST_F(ShardPipelineTest, SameSeedSameBatchesOtherEpochOtherOrder) {
  auto c = config();
  auto a = source(c), b = source(c);
  const auto x = drain(*a), y = drain(*b);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) expectSame(x[i], y[i]);
  a->setEpoch(1);
  const auto z = drain(*a);
  ASSERT_FALSE(z.empty());
  EXPECT_FALSE(torch::equal(x[0].batches[0].inputIds, z[0].batches[0].inputIds));
}

TEST_F(ShardPipelineTest, ResumeContinuesWithTheSameBatches) {
  auto c = config();
  c.data.datasets[0].workers = 2;
  c.data.datasets[1].workers = 2;
  auto a = source(c);
  const auto full = drain(*a);
  ASSERT_GE(full.size(), 4u);
  for (int64_t k : {int64_t{1}, int64_t{3}}) {
    auto first = source(c);
    drain(*first, k);
    const DataPosition at = first->position();
    ASSERT_EQ(at.cursors.size(), 2u);
    for (size_t d = 0; d < 2; ++d)
      EXPECT_EQ(at.cursors[d], full[static_cast<size_t>(k) - 1].batches[d].cursor);
    auto resumed = source(c);
    ASSERT_TRUE(resumed->restore(at));
    EXPECT_EQ(resumed->position(), at);  // the cursors included, before any batch is rebuilt
    const auto rest = drain(*resumed);
    ASSERT_EQ(rest.size(), full.size() - static_cast<size_t>(k));
    for (size_t i = 0; i < rest.size(); ++i) {
      expectSame(rest[i], full[static_cast<size_t>(k) + i]);
      for (size_t d = 0; d < 2; ++d) {  // the replayed reads bring the uninterrupted run's cursors
        ASSERT_TRUE(rest[i].batches[d].cursor.has_value());
        EXPECT_EQ(rest[i].batches[d].cursor, full[static_cast<size_t>(k) + i].batches[d].cursor);
      }
    }
    EXPECT_EQ(resumed->position(), a->position());
  }
  EXPECT_EQ(a->position().cursors.size(), 2u);
  a->setEpoch(1);
  EXPECT_TRUE(a->position().cursors.empty());  // nothing consumed of epoch 1 yet
  DataPosition other = a->position();
  other.rank = 1;
  EXPECT_FALSE(source(c)->restore(other));
}

// NOTE [Shard cursor], checked against an independent count: the samples
// each shard holds (read back with the tar reader), the plan's shard order
// and the shuffle buffer's release rule give, for every LAION batch (no LAION
// sample is dropped), the shard being read and how many of its samples had
// been read when the batch's last row arrived; an epoch longer than a pass
// covers the end-of-pass drain (the last shard, fully read) and pass 1.
TEST_F(ShardPipelineTest, CursorsNameTheShardAndTheSamplesReadFromIt) {
  auto c = config();
  c.data.datasets[0].samples_per_epoch = 160;  // 40 batches of 4; a pass holds 4 x 24 = 96 samples
  c.data.datasets[1].samples_per_epoch = 80;
  auto s = source(c);
  ASSERT_TRUE(s);
  const auto steps = drain(*s);
  ASSERT_EQ(steps.size(), 40u);
  EXPECT_EQ(s->dropCounts().at("laion").dropped, 0);

  auto plan =
      ShardPlan::create("laion", c.data.datasets[0].shards, {static_cast<uint64_t>(c.seed), 0, 1, 1, false});
  ASSERT_TRUE(plan);
  std::map<std::string, int64_t> held;  // samples per shard, as the tar reader groups them
  for (const auto& shard : plan->shards()) {
    auto reader = TarSampleReader::open(shard);
    ASSERT_TRUE(reader) << reader.status().message();
    for (;;) {
      auto sample = reader->next();
      ASSERT_TRUE(sample) << sample.status().message();
      if (!sample->has_value()) break;
      ++held[shard];
    }
    EXPECT_EQ(held[shard], 24) << shard;
  }
  std::vector<ShardCursor> expected;
  int64_t out = 0;  // samples released into batches
  const int64_t batch = 4;
  const auto capacity = static_cast<size_t>(c.data.shuffle_buffer);
  int64_t fromDrain = 0;  // batches completed while pass 0's buffer drained: their cursor is the last shard
  for (int64_t pass = 0; expected.size() < steps.size(); ++pass) {
    SampleShuffle<int> shuffle(capacity, capacity / 5, 0);
    ShardCursor last;
    for (const auto& shard : plan->workerShards(0, pass, 0)) {
      const auto index =
          std::find(plan->shards().begin(), plan->shards().end(), shard) - plan->shards().begin();
      last = {shard, index, 4, 0, pass, 0};
      for (int64_t n = 1; n <= held[shard]; ++n) {
        last.samplesRead = n;
        if (shuffle.push(0) && ++out % batch == 0) expected.push_back(last);
      }
    }
    while (shuffle.drain()) {
      if (++out % batch == 0) {
        if (expected.size() < steps.size()) ++fromDrain;
        expected.push_back(last);
      }
    }
  }
  EXPECT_GT(fromDrain, 0);
  bool secondPass = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Batch* laion = steps[i].find("laion");
    ASSERT_TRUE(laion && laion->cursor);
    EXPECT_EQ(*laion->cursor, expected[i]) << "batch " << i;
    secondPass |= laion->cursor->pass == 1;
    const auto& name = laion->cursor->shard;  // ".../laion-000003.tar": its index in the expanded list
    EXPECT_EQ(std::stoll(name.substr(name.size() - 10, 6)), laion->cursor->shardIndex) << name;
    const Batch* mmc4 = steps[i].find("mmc4");
    ASSERT_TRUE(mmc4 && mmc4->cursor);
    EXPECT_GE(mmc4->cursor->samplesRead, 1);
    EXPECT_LE(mmc4->cursor->samplesRead, 16);
    EXPECT_NE(mmc4->cursor->shard.find("mmc4-"), std::string::npos);
  }
  EXPECT_TRUE(secondPass);
  const DataPosition p = s->position();
  ASSERT_EQ(p.cursors.size(), 2u);
  EXPECT_EQ(p.cursors[0], expected[steps.size() - 1]);
  EXPECT_EQ(p.cursors[1], *steps.back().find("mmc4")->cursor);
  const auto back = decodeDataPosition(encodeDataPosition(p));
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back.value(), p);
}

TEST_F(ShardPipelineTest, RanksAndWorkersReadDisjointShards) {
  auto spec = good_->laionShards + "::" + good_->mmc4Shards;  // 8 shards
  std::multiset<std::string> seen;
  for (int64_t rank = 0; rank < 2; ++rank) {
    auto plan = ShardPlan::create("laion", spec, {7, rank, 2, 2, false});
    ASSERT_TRUE(plan) << plan.status().message();
    for (int64_t w = 0; w < 2; ++w) {
      const auto names = plan->workerShards(0, 0, w);
      const auto indices = plan->workerShardIndices(0, 0, w);
      ASSERT_EQ(names.size(), indices.size());
      for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(plan->shards()[indices[i]], names[i]);
      for (const auto& s : names) seen.insert(s);
    }
  }
  EXPECT_EQ(seen.size(), 8u);  // every shard once per pass, to exactly one (rank, worker)
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 8u);

  // Resampled: with replacement, reproducible, a different stream per worker.
  auto r0 = ShardPlan::create("laion", spec, {7, 0, 2, 2, true});
  auto again = ShardPlan::create("laion", spec, {7, 0, 2, 2, true});
  ASSERT_TRUE(r0);
  const auto draws = r0->workerShards(0, 0, 0);
  EXPECT_EQ(draws.size(), 8u);
  EXPECT_EQ(draws, again->workerShards(0, 0, 0));
  EXPECT_NE(draws, r0->workerShards(0, 0, 1));
  EXPECT_NE(draws, r0->workerShards(1, 0, 0));
  std::multiset<std::string> many;
  for (int64_t pass = 0; pass < 8; ++pass) {
    for (const auto& s : r0->workerShards(0, pass, 0)) many.insert(s);
  }
  EXPECT_LT(std::set<std::string>(many.begin(), many.end()).size(), many.size());  // repeats
  EXPECT_TRUE(
      ShardPlan::create("laion", good_->laionShards, {7, 0, 4, 2, true}));  // fewer shards than workers
  auto p0 = ShardPlan::create("laion", spec, {7, 0, 1, 1, false});
  EXPECT_NE(p0->workerShards(0, 0, 0), p0->workerShards(1, 0, 0));  // a new order each epoch
  auto few = ShardPlan::create("laion", good_->laionShards, {7, 0, 4, 2, false});
  ASSERT_FALSE(few);
  EXPECT_NE(few.status().message().find("data.resampled"), std::string::npos) << few.status().message();
}

TEST_F(ShardPipelineTest, BrokenDataIsCountedAndPastTheThresholdStopsTheRun) {
  SyntheticShardOptions o;
  o.outDir = (*dir_ / "bad").string();
  o.laionShards = 4;
  o.laionSamplesPerShard = 32;
  o.mmc4Shards = 4;
  o.mmc4DocsPerShard = 8;
  o.imageWidth = 64;
  o.imageHeight = 48;
  o.badEvery = 6;
  auto bad = writeSyntheticShards(o);
  ASSERT_TRUE(bad) << bad.status().message();
  // A truncated copy of a good shard and a file that is no tar at all.
  const auto cut = *dir_ / "bad" / "cut.tar";
  fsys::copy_file(*dir_ / "good" / "laion-000001.tar", cut);
  fsys::resize_file(cut, fsys::file_size(cut) / 2 + 100);
  std::ofstream(*dir_ / "bad" / "junk.tar") << "this is not a tar archive";

  auto c = config();
  c.data.datasets[0].shards =
      bad->laionShards + "::" + cut.string() + "::" + (*dir_ / "bad" / "junk.tar").string();
  c.data.datasets[1].shards = bad->mmc4Shards;
  c.data.max_drop_rate_pct = 100;
  auto tolerant = source(c);
  drain(*tolerant);
  const auto counts = tolerant->dropCounts();
  const auto& laion = counts.at("laion");
  EXPECT_GT(laion.byReason.at("bad_image"), 0);
  EXPECT_GT(laion.byReason.at("corrupt_tar"), 0);
  EXPECT_GT(laion.byShard.at(cut.string()).at("corrupt_tar"), 0);
  EXPECT_GT(counts.at("mmc4").byReason.at("bad_base64"), 0);
  EXPECT_FALSE(tolerant->takeProblems().empty());

  c.data.max_drop_rate_pct = 1;
  auto strict = source(c);
  protocol::Status failure;
  for (int i = 0; i < 100 && failure; ++i) {
    auto b = strict->next();
    if (!b) failure = b.status();
    if (b && !b.value()) break;
  }
  ASSERT_FALSE(failure);
  EXPECT_NE(failure.message().find("max_drop_rate_pct"), std::string::npos) << failure.message();
  const bool namesReason = failure.message().find("bad_image") != std::string::npos ||
                           failure.message().find("bad_base64") != std::string::npos;
  EXPECT_TRUE(namesReason) << failure.message();
}

// Workers reuse batch tensors the consumer has let go of and zero only the
// image slots an older row left dirty (NOTE [Dirty image slots]). A run that
// lets go of every batch must deliver what a run that holds them all (fresh
// tensors) delivers, bad samples included, and MMC4's padding slots are zero.
TEST_F(ShardPipelineTest, ReusedImageTensorsHoldNoOlderPixels) {
  SyntheticShardOptions o;
  o.outDir = (*dir_ / "reuse").string();
  o.laionShards = 2;
  o.laionSamplesPerShard = 40;
  o.mmc4Shards = 4;
  o.mmc4DocsPerShard = 24;
  o.imageWidth = 40;
  o.imageHeight = 30;
  o.maxImagesPerDoc = 3;
  o.badEvery = 7;
  auto data = writeSyntheticShards(o);
  ASSERT_TRUE(data) << data.status().message();
  auto c = config();
  c.data.datasets[0].shards = data->laionShards;
  c.data.datasets[1].shards = data->mmc4Shards;
  c.data.datasets[1].max_num_images = 3;
  c.data.max_drop_rate_pct = 100;

  auto holding = source(c);
  const auto held = drain(*holding);
  auto releasing = source(c);
  std::vector<std::vector<torch::Tensor>> copies;
  while (true) {
    auto b = releasing->next();
    ASSERT_TRUE(b) << b.status().message();
    if (!b.value()) break;
    copies.emplace_back();
    for (const auto& batch : b.value()->batches) copies.back().push_back(batch.images.clone());
  }  // each step's tensors go back to the workers here
  ASSERT_EQ(copies.size(), held.size());
  ASSERT_GT(held.size(), 8u);  // more steps than the pool holds tensors
  int64_t padded = 0;
  for (size_t i = 0; i < held.size(); ++i) {
    for (size_t d = 0; d < held[i].batches.size(); ++d) {
      const auto& images = held[i].batches[d].images;
      ASSERT_TRUE(torch::equal(images, copies[i][d])) << "step " << i << " " << held[i].batches[d].dataset;
      if (held[i].batches[d].kind != DatasetKind::kMmc4) continue;
      for (int64_t r = 0; r < images.size(0); ++r) {
        const auto used = (images[r].abs().flatten(1).amax(1) > 0).to(torch::kInt64);
        const int64_t n = used.sum().item<int64_t>();
        ASSERT_GE(n, 1) << "step " << i << " row " << r;
        // Used slots first, zero padding after them.
        ASSERT_EQ(used.slice(0, 0, n).sum().item<int64_t>(), n) << "step " << i << " row " << r;
        padded += images.size(1) - n;
      }
    }
  }
  EXPECT_GT(padded, 0);
  EXPECT_GT(releasing->dropCounts().at("mmc4").dropped + releasing->dropCounts().at("laion").dropped, 0);
}

// A `pipe:` shard whose command goes quiet mid-tar (an ssh to a host that
// stopped answering): the worker blocks in the read, and destroying the
// source must still return at once and leave no command running. Before
// ReadInterrupt this hung forever (CTest's timeout would end it).
TEST_F(ShardPipelineTest, StoppingNeverWaitsOnAQuietPipe) {
  const auto shard = *dir_ / "good" / "laion-000000.tar";
  const auto started = *dir_ / "quiet.started";
  fsys::remove(started);
  auto c = config();
  c.data.datasets[0].shards = "pipe:head -c " + std::to_string(fsys::file_size(shard) * 3 / 4) + " '" +
                              shard.string() + "'; touch '" + started.string() + "'; exec sleep 1000";
  c.data.datasets[0].workers = 1;
  {
    auto s = source(c);
    ASSERT_TRUE(s);
    auto first = s->next();  // the part before the silence makes a batch
    ASSERT_TRUE(first) << first.status().message();
    ASSERT_TRUE(first.value());
    while (!fsys::exists(started)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }  // ~ShardSource stops the worker blocked in the read
  int status = 0;
  EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1);  // the command was stopped and reaped
  EXPECT_EQ(errno, ECHILD);
}

// NOTE [Data stall]: a `pipe:` command that never prints fails next() after
// data.stall_timeout_s, naming the dataset, the worker, the shard and its
// command; the time it took is printed (never asserted).
TEST_F(ShardPipelineTest, SilentSourceFailsNamingDatasetShardAndCommand) {
  auto c = config();
  c.data.datasets[0].shards = "pipe:exec sleep 1000";
  c.data.datasets[0].workers = 1;
  c.data.stall_timeout_s = 1;
  const auto t0 = std::chrono::steady_clock::now();
  {
    auto s = source(c);
    ASSERT_TRUE(s);
    auto b = s->next();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(b);
    const std::string& m = b.status().message();
    EXPECT_NE(m.find("dataset laion: data worker 0 of rank 0 delivered nothing for"), std::string::npos) << m;
    EXPECT_NE(m.find("(data.stall_timeout_s = 1)"), std::string::npos) << m;
    EXPECT_NE(m.find("shard 1 of 1, command 'exec sleep 1000' (0 samples read from it, pass 0)"),
              std::string::npos)
        << m;
    std::printf("detection: silent data source: %.1f s (data.stall_timeout_s 1 s here; default %lld s)\n",
                took, static_cast<long long>(protocol::defaultRunConfig().data.stall_timeout_s));
  }
  int status = 0;
  EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1);  // the command was stopped and reaped
}

// A command that ends its output mid-tar and lingers without it: the
// reader waits for its exit, the step fails at the stall timeout naming the
// shard, and destroying the source still returns (that wait is interrupted).
TEST_F(ShardPipelineTest, ACommandThatClosedItsOutputAndLingersNeitherHangsNorStops) {
  const auto shard = *dir_ / "good" / "laion-000000.tar";
  auto c = config();
  c.data.datasets[0].shards = "pipe:head -c " + std::to_string(fsys::file_size(shard) * 3 / 4) + " '" +
                              shard.string() + "'; exec >&- 2>&-; exec sleep 1000";
  c.data.datasets[0].workers = 1;
  c.data.stall_timeout_s = 1;
  {
    auto s = source(c);
    ASSERT_TRUE(s);
    std::string failure;
    for (int i = 0; i < 100 && failure.empty(); ++i) {  // the part before the end makes a few batches
      auto b = s->next();
      if (!b) failure = b.status().message();
    }
    EXPECT_NE(failure.find("dataset laion: data worker 0 of rank 0 delivered nothing"), std::string::npos)
        << failure;
    EXPECT_NE(failure.find("laion-000000.tar"), std::string::npos) << failure;
  }  // ~ShardSource interrupts the wait for the command's exit
  int status = 0;
  EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1);  // the command was stopped and reaped
}

// Quiet but not yet stalled: waitReady() answers in slices (the training
// loop polls control between them) and a later take() still works.
TEST_F(ShardPipelineTest, WaitReadyAnswersInSlicesWhileTheSourceIsQuiet) {
  const auto shard = *dir_ / "good" / "laion-000000.tar";
  const auto gate = *dir_ / "slices.gate";
  fsys::remove(gate);
  auto c = config();  // the default stall timeout (300 s)
  c.data.datasets[0].shards =
      "pipe:while [ ! -e '" + gate.string() + "' ]; do sleep 0.05; done; cat '" + shard.string() + "'";
  c.data.datasets[0].workers = 1;
  auto s = source(c);
  ASSERT_TRUE(s);
  for (int i = 0; i < 3; ++i) {
    auto ready = s->waitReady(std::chrono::milliseconds(20));
    ASSERT_TRUE(ready) << ready.status().message();
    EXPECT_FALSE(ready.value());  // the command printed nothing yet
  }
  std::ofstream(gate) << "go";
  for (;;) {
    auto ready = s->waitReady(std::chrono::milliseconds(100));
    ASSERT_TRUE(ready) << ready.status().message();
    if (ready.value()) break;
  }
  auto b = s->next();
  ASSERT_TRUE(b) << b.status().message();
  ASSERT_TRUE(b.value());
  EXPECT_EQ(b.value()->batches.size(), 2u);
}

TEST_F(ShardPipelineTest, AllBadShardsFailInsteadOfSpinning) {
  const auto junk = *dir_ / "junk";
  fsys::create_directories(junk);
  for (int i = 0; i < 4; ++i) std::ofstream(junk / ("j" + std::to_string(i) + ".tar")) << "no tar";
  auto c = config();
  c.data.datasets[0].shards = (junk / "j{0..3}.tar").string();
  c.data.max_drop_rate_pct = 100;
  auto s = source(c);
  auto b = s->next();
  ASSERT_FALSE(b);
  EXPECT_NE(b.status().message().find("no usable sample"), std::string::npos) << b.status().message();
}

// `compat: openflamingo` reaches the MMC4 preparer (NOTE [MMC4 assignment]):
// documents of two pictures and one sentence keep one picture by default
// (one to one) and both under compat (2.0.1: each image its best sentence).
TEST_F(ShardPipelineTest, CompatOpenflamingoGivesMmc4TheReleaseAssignment) {
  std::vector<std::string> large;  // base64 pictures of at least 11,000 bytes
  {
    auto reader = TarSampleReader::open((*dir_ / "good" / "mmc4-000000.tar").string());
    ASSERT_TRUE(reader) << reader.status().message();
    while (large.size() < 16) {
      auto sample = reader->next();
      ASSERT_TRUE(sample) << sample.status().message();
      if (!sample->has_value()) break;
      const Bytes& raw = *(*sample)->find("json");
      const nlohmann::json doc = nlohmann::json::parse(raw.begin(), raw.end());
      for (const auto& info : doc["image_info"]) {
        const std::string b64 = info["image_base64"];
        auto bytes = decodeBase64Lenient(b64);
        ASSERT_TRUE(bytes) << bytes.status().message();
        if (bytes->size() >= 11000) large.push_back(b64);
      }
    }
  }
  ASSERT_GE(large.size(), 4u);
  const fsys::path shards = *dir_ / "one-sentence";
  fsys::create_directories(shards);
  for (int shard = 0; shard < 4; ++shard) {
    auto w = TarWriter::create((shards / ("s" + std::to_string(shard) + ".tar")).string());
    ASSERT_TRUE(w) << w.status().message();
    for (int d = 0; d < 8; ++d) {
      const size_t k = static_cast<size_t>(shard * 8 + d);
      const nlohmann::json doc = {
          {"text_list", {"Only one sentence."}},
          {"image_info",
           {{{"image_base64", large[k % large.size()]}}, {{"image_base64", large[(k + 1) % large.size()]}}}},
          {"similarity_matrix", {{0.30}, {0.40}}}};
      ASSERT_TRUE(w->add("doc" + std::to_string(k) + ".json", doc.dump()));
    }
    ASSERT_TRUE(w->finish());
  }
  for (const std::string compat : {"default", "openflamingo"}) {
    SCOPED_TRACE("compat: " + compat);
    auto c = config();
    c.compat = compat;
    c.data.datasets[1].shards = (shards / "s{0..3}.tar").string();
    auto s = source(c);
    ASSERT_TRUE(s);
    const auto steps = drain(*s, 2);
    ASSERT_EQ(steps.size(), 2u);
    const int64_t want = compat == "openflamingo" ? 2 : 1;
    for (const auto& step : steps) {
      const Batch& b = step.batches[1];
      ASSERT_EQ(b.kind, DatasetKind::kMmc4);
      for (int64_t r = 0; r < b.inputIds.size(0); ++r) {
        EXPECT_EQ((b.inputIds[r] == c.model.tokens.image_id).sum().item<int64_t>(), want) << "row " << r;
        EXPECT_EQ(b.images[r][1].abs().sum().item<float>() != 0.0f, want == 2) << "row " << r;
      }
    }
  }
}

TEST(SampleShuffleTest, IsADeterministicPermutation) {
  std::vector<int> out1, out2;
  for (auto* out : {&out1, &out2}) {
    SampleShuffle<int> s(50, 10, 99);
    for (int i = 0; i < 500; ++i) {
      if (auto x = s.push(i)) out->push_back(*x);
    }
    while (auto x = s.drain()) out->push_back(*x);
  }
  EXPECT_EQ(out1, out2);
  std::vector<int> sorted = out1;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 500; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  int displaced = 0;
  for (int i = 0; i < 500; ++i) displaced += out1[static_cast<size_t>(i)] != i;
  EXPECT_GT(displaced, 400);
}

}  // namespace
}  // namespace fs::data
