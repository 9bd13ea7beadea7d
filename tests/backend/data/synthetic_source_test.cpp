#include "backend/data/synthetic_source.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>

#include "backend/protocol/config/derived.h"
#include "tests/backend/data/tiny_config.h"

namespace fs::data {
namespace {

std::unique_ptr<SyntheticSource> makeSource(const protocol::RunConfig& c, int64_t rank = 0,
                                            int64_t world = 1) {
  auto r = SyntheticSource::create(c, rank, world);
  EXPECT_TRUE(r.isOk()) << r.status().message();
  return std::move(r).value();
}

StepBatches pull(DataSource& src) {
  auto r = src.next();
  EXPECT_TRUE(r.isOk());
  EXPECT_TRUE(r.value().has_value());
  return *r.value();
}

bool sameBatch(const Batch& a, const Batch& b) {
  return a.inputIds.sizes() == b.inputIds.sizes() && torch::equal(a.inputIds, b.inputIds) &&
         torch::equal(a.attentionMask, b.attentionMask) && torch::equal(a.images, b.images);
}

bool sameStep(const StepBatches& a, const StepBatches& b) {
  if (a.batches.size() != b.batches.size()) return false;
  for (size_t i = 0; i < a.batches.size(); ++i) {
    if (!sameBatch(a.batches[i], b.batches[i])) return false;
  }
  return true;
}

// The larger shapes of a real run (default vocabulary, 256 / 6) with small images.
protocol::RunConfig realisticConfig() {
  auto c = protocol::defaultRunConfig();
  c.data.source = "synthetic";
  c.model.vision.image_size = 8;
  c.data.datasets[0].batch_size = 16;
  c.data.datasets[1].batch_size = 8;
  c.data.datasets[0].samples_per_epoch = 160;
  c.data.datasets[1].samples_per_epoch = 80;
  return c;
}

TEST(SyntheticSource, ShapesAndDtypesOfTheTinyPreset) {
  const auto c = fs::test::tinyConfig();
  auto src = makeSource(c);
  const StepBatches step = pull(*src);
  ASSERT_EQ(step.batches.size(), 2u);
  const Batch& laion = step.batches[0];
  const Batch& mmc4 = step.batches[1];
  EXPECT_EQ(laion.dataset, "laion");
  EXPECT_EQ(laion.kind, DatasetKind::kLaion);
  EXPECT_EQ(mmc4.kind, DatasetKind::kMmc4);
  EXPECT_TRUE(checkBatch(laion).isOk()) << checkBatch(laion).message();
  EXPECT_TRUE(checkBatch(mmc4).isOk()) << checkBatch(mmc4).message();
  EXPECT_EQ(laion.images.sizes(), (std::vector<int64_t>{4, 1, 1, 3, 32, 32}));
  EXPECT_EQ(mmc4.images.sizes(), (std::vector<int64_t>{2, 2, 1, 3, 32, 32}));
  EXPECT_EQ(laion.inputIds.size(0), 4);
  EXPECT_LE(laion.inputIds.size(1), 16);
  EXPECT_EQ(mmc4.inputIds.sizes(), (std::vector<int64_t>{2, 48}));
  EXPECT_EQ(laion.inputIds.scalar_type(), torch::kInt64);
  EXPECT_EQ(laion.attentionMask.scalar_type(), torch::kInt64);
  EXPECT_EQ(laion.images.scalar_type(), torch::kFloat32);
  EXPECT_EQ(laion.tokens, laion.attentionMask.sum().item<int64_t>());
  EXPECT_EQ(mmc4.tokens, mmc4.attentionMask.sum().item<int64_t>());
  EXPECT_EQ(step.find("mmc4"), &step.batches[1]);
}

// <image> caption <|endofchunk|> eos, truncated to max_tokens, padded to the longest.
void expectLaionLayout(const Batch& b, const SpecialTokenIds& t, int64_t maxTokens, int& truncated,
                       int& padded) {
  const auto ids = b.inputIds.accessor<int64_t, 2>();
  const auto mask = b.attentionMask.accessor<int64_t, 2>();
  const int64_t L = b.inputIds.size(1);
  EXPECT_LE(L, maxTokens);
  int64_t longest = 0;
  for (int64_t r = 0; r < b.samples; ++r) {
    int64_t n = 0;
    while (n < L && mask[r][n] == 1) ++n;
    longest = std::max(longest, n);
    for (int64_t i = n; i < L; ++i) {
      EXPECT_EQ(mask[r][i], 0);
      EXPECT_EQ(ids[r][i], t.pad);
    }
    ASSERT_GE(n, 2);
    EXPECT_EQ(ids[r][0], t.image);
    if (ids[r][n - 1] == t.eos) {
      EXPECT_EQ(ids[r][n - 2], t.endofchunk);
      for (int64_t i = 1; i < n - 2; ++i) EXPECT_FALSE(t.isSpecial(ids[r][i])) << "row " << r << " pos " << i;
      EXPECT_GE(n, 4);
    } else {
      EXPECT_EQ(n, maxTokens) << "only a truncated caption may lack its eos";
      ++truncated;
      for (int64_t i = 1; i < n; ++i) {
        if (i == n - 1 && ids[r][i] == t.endofchunk) continue;
        EXPECT_FALSE(t.isSpecial(ids[r][i]));
      }
    }
    if (n < L) ++padded;
    for (int64_t i = 0; i < n; ++i) EXPECT_LT(ids[r][i], t.vocabSize);
  }
  EXPECT_EQ(longest, L) << "LAION pads to the longest sample";
  EXPECT_TRUE(torch::all(b.images.ne(0).flatten(1).any(1)).item<bool>()) << "every LAION sample has an image";
}

// [text] <image> text (<eoc> <image> text)* <eoc> eos pad..., truncated to max_tokens.
void expectMmc4Layout(const Batch& b, const SpecialTokenIds& t, int64_t maxTokens, int64_t maxImages,
                      int& truncated) {
  const auto ids = b.inputIds.accessor<int64_t, 2>();
  const auto mask = b.attentionMask.accessor<int64_t, 2>();
  EXPECT_EQ(b.inputIds.size(1), maxTokens) << "MMC4 pads to exactly max_tokens";
  for (int64_t r = 0; r < b.samples; ++r) {
    int64_t n = 0;
    while (n < maxTokens && mask[r][n] == 1) ++n;
    for (int64_t i = n; i < maxTokens; ++i) EXPECT_EQ(ids[r][i], t.pad);
    int64_t first = 0;
    while (first < n && ids[r][first] != t.image) {
      EXPECT_FALSE(t.isSpecial(ids[r][first]));
      ++first;
    }
    ASSERT_LT(first + 1, n) << "row " << r << ": an <image> that is not the last token";
    int64_t images = 0;
    bool ended = false;
    for (int64_t i = first; i < n; ++i) {
      const int64_t id = ids[r][i];
      if (id == t.image) {
        ++images;
        if (i + 1 < n) {
          EXPECT_FALSE(t.isSpecial(ids[r][i + 1])) << "text follows every <image>";
        }
      } else if (id == t.endofchunk) {
        if (i + 1 < n) {
          EXPECT_TRUE(ids[r][i + 1] == t.image || ids[r][i + 1] == t.eos);
        }
      } else if (id == t.eos) {
        EXPECT_EQ(i, n - 1);
        EXPECT_EQ(ids[r][i - 1], t.endofchunk);
        ended = true;
      }
    }
    if (!ended) {
      EXPECT_EQ(n, maxTokens);
      ++truncated;
    }
    EXPECT_GE(images, 1);
    EXPECT_LE(images, maxImages);
    // Real images fill the first slots (at least one per <image> kept), zeros the rest.
    const auto nonzero = b.images[r].ne(0).flatten(1).any(1);
    int64_t real = 0;
    while (real < maxImages && nonzero[real].item<bool>()) ++real;
    EXPECT_GE(real, images);
    for (int64_t k = real; k < maxImages; ++k) EXPECT_FALSE(nonzero[k].item<bool>());
  }
}

TEST(SyntheticSource, TinyLayoutsOverAWholeEpoch) {
  const auto c = fs::test::tinyConfig();
  const auto t = specialTokensFromConfig(c.model.tokens);
  auto src = makeSource(c);
  int laionTruncated = 0, laionPadded = 0, mmc4Truncated = 0;
  while (true) {
    auto r = src->next();
    ASSERT_TRUE(r.isOk());
    if (!r.value()) break;
    expectLaionLayout(r.value()->batches[0], t, 16, laionTruncated, laionPadded);
    expectMmc4Layout(r.value()->batches[1], t, 48, 2, mmc4Truncated);
  }
  EXPECT_GT(laionTruncated, 0) << "some captions overflow, as real ones do";
  EXPECT_GT(laionPadded, 0);
  EXPECT_GT(mmc4Truncated, 0);
}

TEST(SyntheticSource, RealisticShapes) {
  const auto c = realisticConfig();
  const auto t = specialTokensFromConfig(c.model.tokens);
  auto src = makeSource(c);
  int lt = 0, lp = 0, mt = 0;
  for (int s = 0; s < 5; ++s) {
    const auto step = pull(*src);
    expectLaionLayout(step.batches[0], t, 32, lt, lp);
    expectMmc4Layout(step.batches[1], t, 256, 6, mt);
    EXPECT_EQ(step.batches[1].images.sizes(), (std::vector<int64_t>{8, 6, 1, 3, 8, 8}));
  }
  // Images are CLIP-normalised uniform pixels.
  const auto step = pull(*src);
  const auto img = step.batches[0].images;
  EXPECT_GE(img.min().item<float>(), -1.80f);
  EXPECT_LE(img.max().item<float>(), 2.15f);
}

TEST(SyntheticSource, EpochLengthIsDerivedBatchesPerEpoch) {
  const auto c = fs::test::tinyConfig();
  auto src = makeSource(c);
  const auto figures = protocol::deriveFigures(c);
  EXPECT_EQ(src->stepsPerEpoch(), figures.stepsPerEpoch);
  EXPECT_EQ(src->stepsPerEpoch(), 16);
  EXPECT_EQ(src->datasets()[0].batchesPerEpoch, 16);
  int64_t steps = 0;
  while (pull(*src).step == steps) {
    ++steps;
    if (steps == src->stepsPerEpoch()) break;
  }
  EXPECT_EQ(steps, 16);
  EXPECT_FALSE(src->next().value().has_value());
  EXPECT_FALSE(src->next().value().has_value()) << "stays at the end until setEpoch";
  src->setEpoch(1);
  const auto first = pull(*src);
  EXPECT_EQ(first.epoch, 1);
  EXPECT_EQ(first.step, 0);
}

TEST(SyntheticSource, WorldSizeShortensTheEpoch) {
  const auto c = fs::test::tinyConfig();
  auto src = makeSource(c, 1, 2);
  EXPECT_EQ(src->stepsPerEpoch(), 8);  // 64 / (4 x 2)
}

// The DDP equivalence rests on this: rank r of N with batch b holds slice r
// of the global batch one process with N x b draws.
TEST(SyntheticSource, RanksHoldSlicesOfTheGlobalBatch) {
  auto global = fs::test::tinyConfig();
  global.data.datasets[0].batch_size = 4;
  global.data.datasets[1].batch_size = 4;
  auto whole = makeSource(global, 0, 1);
  auto split = global;
  split.data.datasets[0].batch_size = 2;
  split.data.datasets[1].batch_size = 2;
  auto r0 = makeSource(split, 0, 2);
  auto r1 = makeSource(split, 1, 2);
  for (int step = 0; step < 3; ++step) {
    const auto w = pull(*whole);
    const auto parts = std::vector<StepBatches>{pull(*r0), pull(*r1)};
    for (size_t d = 0; d < w.batches.size(); ++d) {
      for (int64_t r = 0; r < 2; ++r) {
        const Batch& part = parts[static_cast<size_t>(r)].batches[d];
        for (int64_t j = 0; j < 2; ++j) {
          const int64_t g = r * 2 + j;
          const int64_t n = part.attentionMask[j].sum().item<int64_t>();
          ASSERT_EQ(w.batches[d].attentionMask[g].sum().item<int64_t>(), n)
              << "step " << step << " sample " << g;
          EXPECT_TRUE(
              torch::equal(part.inputIds[j].narrow(0, 0, n), w.batches[d].inputIds[g].narrow(0, 0, n)))
              << "step " << step << " dataset " << d << " sample " << g;
          EXPECT_TRUE(torch::equal(part.images[j], w.batches[d].images[g]))
              << "step " << step << " sample " << g;
        }
      }
    }
  }
}

TEST(SyntheticSource, DeterministicPerSeedRankAndEpoch) {
  const auto c = fs::test::tinyConfig();
  auto a = makeSource(c, 0, 2);
  auto b = makeSource(c, 0, 2);
  auto other = makeSource(c, 1, 2);
  for (int s = 0; s < 3; ++s) {
    const auto sa = pull(*a), sb = pull(*b), so = pull(*other);
    EXPECT_TRUE(sameStep(sa, sb)) << "step " << s;
    EXPECT_FALSE(sameBatch(sa.batches[0], so.batches[0])) << "ranks get different data";
    EXPECT_FALSE(sameBatch(sa.batches[1], so.batches[1]));
  }
  auto c2 = c;
  c2.seed = 43;
  auto reseeded = makeSource(c2, 0, 2);
  a->setEpoch(0);
  EXPECT_FALSE(sameStep(pull(*a), pull(*reseeded)));
  a->setEpoch(1);
  b->setEpoch(0);
  EXPECT_FALSE(sameStep(pull(*a), pull(*b))) << "epochs differ";
}

TEST(SyntheticSource, PositionRestoreContinuesIdentically) {
  const auto c = fs::test::tinyConfig();
  auto original = makeSource(c);
  original->setEpoch(1);
  for (int s = 0; s < 5; ++s) pull(*original);
  const auto encoded = encodeDataPosition(original->position());
  std::vector<StepBatches> expected;
  for (int s = 0; s < 4; ++s) expected.push_back(pull(*original));

  auto resumed = makeSource(c);
  const auto pos = decodeDataPosition(encoded);
  ASSERT_TRUE(pos.isOk());
  ASSERT_TRUE(resumed->restore(pos.value()).isOk());
  EXPECT_EQ(resumed->epoch(), 1);
  for (int s = 0; s < 4; ++s) {
    const auto got = pull(*resumed);
    EXPECT_EQ(got.step, 5 + s);
    EXPECT_TRUE(sameStep(got, expected[s])) << "step " << s;
  }
}

TEST(SyntheticSource, RestoreRefusesAnotherRankOrDatasets) {
  const auto c = fs::test::tinyConfig();
  auto src = makeSource(c, 0, 2);
  pull(*src);
  DataPosition p = src->position();
  auto other = makeSource(c, 1, 2);
  EXPECT_FALSE(other->restore(p).isOk());
  DataPosition renamed = p;
  renamed.datasets[1] = "c4";
  EXPECT_FALSE(src->restore(renamed).isOk());
  DataPosition shards = p;
  shards.source = "shards";
  EXPECT_FALSE(src->restore(shards).isOk());
  DataPosition past = p;
  past.batchesConsumed = {100, 100};
  EXPECT_FALSE(src->restore(past).isOk());
  EXPECT_EQ(src->position(), p) << "a refused restore leaves the source unchanged";
}

TEST(SyntheticSource, CreateNamesBadFields) {
  auto c = fs::test::tinyConfig();
  EXPECT_FALSE(SyntheticSource::create(c, 2, 2).isOk());
  auto badType = c;
  badType.data.datasets[1].type = "c4";
  const auto r = SyntheticSource::create(badType, 0, 1);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("data.datasets[1].type"), std::string::npos);
  auto badToken = c;
  badToken.model.tokens.image_id = 500;
  const auto r2 = SyntheticSource::create(badToken, 0, 1);
  ASSERT_FALSE(r2.isOk());
  EXPECT_NE(r2.status().message().find("model.tokens.image_id"), std::string::npos);
}

TEST(SyntheticSource, TinyEpochIsCheap) {
  const auto c = fs::test::tinyConfig();
  auto src = makeSource(c);
  const auto start = std::chrono::steady_clock::now();
  while (src->next().value()) {
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 500.0) << "16 steps of tiny synthetic data took " << ms << " ms";
}

}  // namespace
}  // namespace fs::data
