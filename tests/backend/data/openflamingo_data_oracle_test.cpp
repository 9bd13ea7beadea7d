// Our LAION and MMC4 preparers against OpenFlamingo's OWN data functions
// (the pinned open-flamingo wheel's preprocess_image, preprocess_laion_text,
// preprocess_interleaved; oracles/openflamingo_data.py runs them) on the same
// real shards: make-synthetic's LAION and MMC4 tars plus a tar of hand-made
// LAION samples and one of hand-made MMC4 documents, built from their JPEGs
// (the reference reads them with webdataset as OpenFlamingo's pipeline
// does, without its shuffles; we with TarSampleReader). Both sides use one
// tokenizer, trained by the tokenizers library and loaded by transformers
// (as OpenFlamingo's factory) and by our loadTokenizer from the same files.
//
// Compared per LAION batch and per MMC4 document: input ids and attention
// masks exactly, pixels to 1e-6 (in 0..1 units, as pil_parity_test's
// preprocessing check: the JPEG decode is byte-equal, same libjpeg-turbo),
// the rejections, and whether the single-image coin was drawn.
//
// Randomness: the reference draws its flip from torch and its single-image
// coin from Python's `random`, we draw both from the worker's Rng. The
// oracle seeds its generators per batch / document and reports the outcomes;
// the test then picks, per document, an Rng seed whose two coins give the
// same outcomes (flip first, then the single-image coin: our order, which is
// also the reference's order of use). So outcomes are compared sample for
// sample; the streams are not (and cannot be: pid/time-seeded in the reference).
//
// The generated LAION shard also goes through ShardWorker itself (its batch
// builder pads the rows and draws the batch's flip coin); elsewhere rows are
// padded here as that builder pads them (LAION to the longest row, MMC4 to
// max_tokens, pad id, mask 1 on the ids) and unused image slots zeroed.
//
// MMC4 runs twice over the same reference answers. With `compat:
// openflamingo` (Mmc4Assignment::kBestSentence) our preparer must equal
// 2.0.1 on every document. By default (kOneToOne) it follows the spec and
// OpenFlamingo's later main branch: one-to-one assignment and every image
// of 11,000 bytes decoded, where 2.0.1 gives each image its best sentence
// and decodes only the images that pass the threshold (NOTE [MMC4
// assignment]); the hand-made documents marked false in kCraftedAgree pin
// that the default still differs there (docs/data.md, "Where OpenFlamingo
// 2.0.1 and we differ").
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/data/drop_ledger.h"
#include "backend/data/image/clip_preprocess.h"
#include "backend/data/laion_preparer.h"
#include "backend/data/mmc4_preparer.h"
#include "backend/data/shard_plan.h"
#include "backend/data/shard_worker.h"
#include "backend/data/shardgen/synthetic_shards.h"
#include "backend/data/shards/tar_samples.h"
#include "backend/data/tokenizer/tokenizer.h"
#include "tests/backend/data/crafted_shards.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::data {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

constexpr int64_t kImageSize = 32;
constexpr int64_t kLaionBatch = 8;
constexpr int64_t kLaionMaxTokens = 32;
constexpr uint64_t kSeed = 20240;
// |ours - reference| * std, i.e. in 0..1 pixel units; pil_parity_test holds
// the preprocessing of the same RGB pixels to this, and a JPEG decodes
// byte-equal (same libjpeg-turbo), so nothing else may add to it.
constexpr double kPixelTolerance = 1e-6;

struct Mmc4Setting {
  double simThreshold;
  int64_t minNumImages, maxNumImages, maxTokens;
};
// The recipe's threshold with: the defaults; a cut to 2 images with at least
// 2 required (too_few_images); texts truncated hard (images cut from the
// text, image_last_token when a lone <image> lands on the last slot).
const std::vector<Mmc4Setting> kSettings = {{0.24, 1, 3, 256}, {0.24, 2, 2, 48}, {0.24, 1, 3, 12}};

// Hand-made documents: name -> whether OpenFlamingo 2.0.1 and our DEFAULT
// must agree. false: the argmax / one-to-one and decode cases, where the
// default must differ (docs/data.md, "Where OpenFlamingo 2.0.1 and we
// differ"). Under compat every document must agree.
const std::map<std::string, bool> kCraftedAgree = {
    {"crafted-distinct", true},        {"crafted-no-base64-field", true}, {"crafted-bad-kept-image", true},
    {"crafted-small-only", true},      {"crafted-odd-sentences-1", true}, {"crafted-at-threshold", true},
    {"crafted-odd-sentences-2", true}, {"crafted-shared-best", false},    {"crafted-more-images", false},
    {"crafted-assigned-below", false}, {"crafted-bad-unmatched", false},  {"crafted-tied-best", true},
    {"crafted-bad-past-cap", true},    {"crafted-no-sentences", true},
};

std::string readText(const stdfs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Python's str(ValueError) from preprocess_interleaved (or an exception of
// PIL's) -> the reasons of ours that mean the same.
std::set<std::string> reasonsFor(const json& entry) {
  const std::string type = entry["error"], message = entry["message"];
  if (message == "No images in sample") return {"no_valid_images", "below_threshold"};
  // numpy's argmax of an image's row when text_list is empty (crafted-no-sentences).
  if (message == "attempt to get argmax of an empty sequence") return {"no_valid_images", "below_threshold"};
  if (message.rfind("Fewer than", 0) == 0) return {"too_few_images"};
  if (message == "Only one image in sample") return {"single_image_coin"};
  if (message.rfind("Only one image at the end", 0) == 0) return {"image_last_token"};
  if (type == "UnidentifiedImageError" || type == "OSError") return {"bad_image"};
  return {"<unmapped " + type + ": " + message + ">"};
}

// An Rng seed whose first coin is `flip` and second is `singleDrop`.
uint64_t seedFor(bool flip, bool singleDrop) {
  for (uint64_t s = 0;; ++s) {
    Rng r(s);
    const bool a = r.coin(0.5), b = r.coin(0.5);
    if (a == flip && b == singleDrop) return s;
  }
}

// How many values prepare() drew from `used`, which started as Rng(seed).
int drawsSince(uint64_t seed, Rng used) {
  const uint64_t next = used.nextU64();
  Rng fresh(seed);
  for (int k = 0; k < 8; ++k) {
    if (fresh.nextU64() == next) return k;
  }
  return -1;
}

class OpenFlamingoDataOracle : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new stdfs::path(stdfs::path(FS_BINARY_DIR) / "tests" / "openflamingo_data_oracle");
    stdfs::remove_all(*dir_);
    SyntheticShardOptions o;
    o.outDir = (*dir_ / "shards").string();
    o.laionShards = 1;
    o.laionSamplesPerShard = 24;
    o.mmc4Shards = 1;
    o.mmc4DocsPerShard = 48;
    o.imageWidth = 120;
    o.imageHeight = 90;
    o.maxImagesPerDoc = 3;
    o.seed = 11;
    auto written = writeSyntheticShards(o);
    if (!written) {
      setupError_ = new std::string("make-synthetic: " + written.status().message());
      return;
    }
    const std::string laion = o.outDir + "/laion-000000.tar", mmc4 = o.outDir + "/mmc4-000000.tar";
    laionShard_ = new std::string(laion);
    const std::string crafted = (*dir_ / "mmc4-crafted.tar").string();
    const std::string laionCrafted = (*dir_ / "laion-crafted.tar").string();
    if (std::string e = test::writeCraftedMmc4(mmc4, crafted); !e.empty()) {
      setupError_ = new std::string(e);
      return;
    }
    if (std::string e = test::writeCraftedLaion(laion, laionCrafted); !e.empty()) {
      setupError_ = new std::string(e);
      return;
    }
    json settings = json::array();
    for (const auto& s : kSettings) {
      settings.push_back({{"sim_threshold", s.simThreshold},
                          {"min_num_images", s.minNumImages},
                          {"max_num_images", s.maxNumImages},
                          {"max_tokens", s.maxTokens}});
    }
    const json request = {{"laion", {laion, laionCrafted}}, {"mmc4", {mmc4, crafted}},
                          {"image_size", kImageSize},       {"seed", kSeed},
                          {"laion_batch", kLaionBatch},     {"laion_max_tokens", kLaionMaxTokens},
                          {"mmc4_settings", settings},      {"vocab_size", 400}};
    std::ofstream(*dir_ / "request.json") << request.dump();
    const stdfs::path out = *dir_ / "reference";
    const std::string cmd =
        std::string(FS_PYTHON) + " " + FS_SOURCE_DIR + "/tests/backend/data/oracles/openflamingo_data.py " +
        (*dir_ / "request.json").string() + " " + out.string() + " 2>" + (*dir_ / "oracle.log").string();
    const int rc = std::system(cmd.c_str());
    const int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    if (code == 77 || code == 127) {  // a package missing, or FS_PYTHON itself
      unavailable_ =
          new std::string("OpenFlamingo's data functions cannot run: " + readText(*dir_ / "oracle.log"));
      return;
    }
    if (code != 0) {
      setupError_ = new std::string("oracle failed (" + cmd + "):\n" + readText(*dir_ / "oracle.log"));
      return;
    }
    answer_ = new json(json::parse(readText(out / "answer.json")));
    const std::string raw = readText(out / "pixels.f32");
    pixels_ = new std::vector<float>(raw.size() / sizeof(float));
    std::memcpy(pixels_->data(), raw.data(), pixels_->size() * sizeof(float));
    auto tok = loadTokenizer((out / "tokenizer").string(), "mpt");
    if (!tok) {
      setupError_ = new std::string("loadTokenizer: " + tok.status().message());
      return;
    }
    tokenizer_ = new std::shared_ptr<const Tokenizer>(std::move(tok).value());
    laion_ = new std::map<std::string, Sample>(readSamples({laion, laionCrafted}));
    mmc4_ = new std::map<std::string, Sample>(readSamples({mmc4, crafted}));
  }

  static std::map<std::string, Sample> readSamples(const std::vector<std::string>& urls) {
    std::map<std::string, Sample> out;
    for (const auto& url : urls) {
      auto reader = TarSampleReader::open(url);
      EXPECT_TRUE(reader) << reader.status().message();
      if (!reader) continue;
      for (;;) {
        auto s = reader->next();
        EXPECT_TRUE(s) << s.status().message();
        if (!s || !s->has_value()) break;
        out.emplace((*s)->key, std::move(**s));
      }
    }
    return out;
  }

  void SetUp() override {
    if (setupError_) FAIL() << *setupError_;
    if (unavailable_) FS_FIXTURE_UNAVAILABLE(*unavailable_);
  }

  // max |ours - reference| * std over `count` floats at `offset` of the
  // reference's pixels, or +inf when the reference's shape is not `shape`.
  static double pixelDiff(const json& ref, const std::vector<int64_t>& shape, const float* ours) {
    if (ref["shape"].get<std::vector<int64_t>>() != shape) return INFINITY;
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    const float* theirs = pixels_->data() + ref["offset"].get<int64_t>();
    const int64_t plane = kImageSize * kImageSize;
    double m = 0;
    for (int64_t i = 0; i < count; ++i) {
      const double d = std::fabs(static_cast<double>(ours[i]) - theirs[i]) * kClipStd[(i / plane) % 3];
      m = std::max(m, d);
    }
    return m;
  }

  static const Tokenizer& tok() { return **tokenizer_; }
  static void checkMmc4Documents(Mmc4Assignment assignment);

  static stdfs::path* dir_;
  static std::string* setupError_;
  static std::string* unavailable_;
  static std::string* laionShard_;
  static json* answer_;
  static std::vector<float>* pixels_;
  static std::shared_ptr<const Tokenizer>* tokenizer_;
  static std::map<std::string, Sample>* laion_;
  static std::map<std::string, Sample>* mmc4_;
};

stdfs::path* OpenFlamingoDataOracle::dir_ = nullptr;
std::string* OpenFlamingoDataOracle::setupError_ = nullptr;
std::string* OpenFlamingoDataOracle::unavailable_ = nullptr;
std::string* OpenFlamingoDataOracle::laionShard_ = nullptr;
json* OpenFlamingoDataOracle::answer_ = nullptr;
std::vector<float>* OpenFlamingoDataOracle::pixels_ = nullptr;
std::shared_ptr<const Tokenizer>* OpenFlamingoDataOracle::tokenizer_ = nullptr;
std::map<std::string, Sample>* OpenFlamingoDataOracle::laion_ = nullptr;
std::map<std::string, Sample>* OpenFlamingoDataOracle::mmc4_ = nullptr;

TEST_F(OpenFlamingoDataOracle, TokenizerIsTheSameOnBothSides) {
  const json& t = (*answer_)["tokenizer"];
  std::printf("reference image transform: %s\n", t["transform"].get<std::string>().c_str());
  EXPECT_EQ(t["size"], tok().size());
  EXPECT_EQ(t["eos_token"], tok().eosToken());
  EXPECT_EQ(t["padding_side"], "right");
  EXPECT_EQ(t["ids"]["<|endoftext|>"], tok().eosId());
  EXPECT_EQ(t["ids"]["<|endofchunk|>"], tok().endofchunkId());
  EXPECT_EQ(t["ids"]["<image>"], tok().imageId());
  EXPECT_EQ(t["ids"]["<PAD>"], tok().padId());
  EXPECT_FALSE(tok().bosId().has_value());  // MPT / GPT-NeoX: no BOS, as the reference's tokenizer
}

TEST_F(OpenFlamingoDataOracle, LaionBatchesMatch) {
  const LaionPreparer preparer(*tokenizer_, kImageSize, kLaionMaxTokens);
  const json& batches = (*answer_)["laion"];
  ASSERT_EQ(batches.size(), (24 + 8) / kLaionBatch);  // the sample without txt is filtered out
  ASSERT_EQ(laion_->size(), 24 + 9u);                 // our reader sees the same samples, that one too
  for (const json& batch : batches) {
    for (const auto& key : batch["keys"]) EXPECT_NE(key, "laion-no-text");
  }
  {
    std::vector<float> image(3 * kImageSize * kImageSize);
    SampleSlot slot{image.data(), 0, {}};
    Rng unused(0);
    const auto drop = preparer.prepare(laion_->at("laion-no-text"), unused, false, slot);
    ASSERT_TRUE(drop);
    EXPECT_EQ(drop->reason, "missing_text");
  }
  const int64_t imageFloats = 3 * kImageSize * kImageSize;
  int truncated = 0, flipped = 0;
  double worst = 0;
  for (const json& batch : batches) {
    const bool flip = batch["flip"];
    flipped += flip;
    const auto keys = batch["keys"].get<std::vector<std::string>>();
    std::vector<float> images(keys.size() * imageFloats, NAN);
    std::vector<std::vector<int64_t>> rows;
    Rng unused(0);
    for (size_t r = 0; r < keys.size(); ++r) {
      ASSERT_TRUE(laion_->count(keys[r])) << keys[r];
      SampleSlot slot{images.data() + r * imageFloats, 0, {}};
      const auto drop = preparer.prepare(laion_->at(keys[r]), unused, flip, slot);
      ASSERT_FALSE(drop) << keys[r] << ": " << drop->reason << " " << drop->detail;
      EXPECT_EQ(slot.imagesWritten, 1);
      truncated += slot.ids.size() == static_cast<size_t>(kLaionMaxTokens);
      rows.push_back(slot.ids);
    }
    // The batch as ShardWorker's builder pads it: to the longest row, pad id, mask 1 on the ids.
    size_t width = 1;
    for (const auto& row : rows) width = std::max(width, row.size());
    std::vector<std::vector<int64_t>> ids, mask;
    for (const auto& row : rows) {
      ids.emplace_back(width, tok().padId());
      mask.emplace_back(width, 0);
      std::copy(row.begin(), row.end(), ids.back().begin());
      std::fill_n(mask.back().begin(), row.size(), 1);
    }
    EXPECT_EQ(batch["ids"].get<decltype(ids)>(), ids) << "batch of " << keys.front();
    EXPECT_EQ(batch["mask"].get<decltype(mask)>(), mask) << "batch of " << keys.front();
    const double diff = pixelDiff(
        batch["images"], {static_cast<int64_t>(keys.size()), 3, kImageSize, kImageSize}, images.data());
    EXPECT_LE(diff, kPixelTolerance) << "batch of " << keys.front() << " flip " << flip;
    worst = std::max(worst, diff);
  }
  std::printf("LAION: %zu batches (%d flipped), %d captions cut at %lld tokens, max pixel diff %.3g\n",
              batches.size(), flipped, truncated, static_cast<long long>(kLaionMaxTokens), worst);
  EXPECT_GT(truncated, 0) << "no caption reaches max_tokens: truncation is not tested";
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, static_cast<int>(batches.size()));
}

template <class T>
std::vector<std::vector<T>> rowsOf(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  std::vector<std::vector<T>> out(static_cast<size_t>(c.size(0)));
  for (int64_t r = 0; r < c.size(0); ++r) {
    const T* row = c.data_ptr<T>() + r * c.size(1);
    out[static_cast<size_t>(r)].assign(row, row + c.size(1));
  }
  return out;
}

// The generated LAION shard through ShardWorker itself (its shuffle at
// capacity 1, so in tar order): its batches are the reference's first three,
// padded by the worker's batch builder. The flip is the worker's own coin,
// so the images must equal the reference's batch with one of the two flip
// outcomes, all images together.
TEST_F(OpenFlamingoDataOracle, LaionBatchesFromOurWorkerMatch) {
  auto plan = ShardPlan::create("laion", *laionShard_, ShardPlanOptions{});
  ASSERT_TRUE(plan) << plan.status().message();
  WorkerSpec spec;
  spec.dataset = "laion";
  spec.kind = DatasetKind::kLaion;
  spec.batchSize = kLaionBatch;
  spec.maxTokens = kLaionMaxTokens;
  spec.imagesPerSample = 1;
  spec.imageSize = kImageSize;
  spec.padId = tok().padId();
  spec.quota = 24 / kLaionBatch;
  spec.shuffleCapacity = spec.shuffleInitial = 1;
  spec.seed = 1;  // its three batch coins are heads, heads, tails: both outcomes occur
  const LaionPreparer preparer(*tokenizer_, kImageSize, kLaionMaxTokens);
  DropLedger ledger("laion");
  ShardWorker worker(spec, plan.value(), preparer, ledger);
  worker.start(0, 0);
  int flips = 0;
  for (int64_t b = 0; b < spec.quota; ++b) {
    auto batch = worker.take();
    ASSERT_TRUE(batch) << batch.status().message();
    const json& ref = (*answer_)["laion"][static_cast<size_t>(b)];
    EXPECT_EQ(ref["ids"].get<std::vector<std::vector<int64_t>>>(), rowsOf<int64_t>(batch->inputIds))
        << "batch " << b;
    EXPECT_EQ(ref["mask"].get<std::vector<std::vector<int64_t>>>(), rowsOf<int64_t>(batch->attentionMask))
        << "batch " << b;
    ASSERT_EQ(batch->images.sizes(), (std::vector<int64_t>{kLaionBatch, 1, 1, 3, kImageSize, kImageSize}));
    const torch::Tensor images = batch->images.contiguous();
    const std::vector<int64_t> shape = {kLaionBatch, 3, kImageSize, kImageSize};
    const double same = pixelDiff(ref["images"], shape, images.data_ptr<float>());
    const double other = pixelDiff(ref["images_other_flip"], shape, images.data_ptr<float>());
    EXPECT_LE(std::min(same, other), kPixelTolerance) << "batch " << b;
    flips += (same <= kPixelTolerance) == static_cast<bool>(ref["flip"]);  // our coin
  }
  worker.stop();
  EXPECT_GT(flips, 0);
  EXPECT_LT(flips, spec.quota);
  std::printf("LAION through ShardWorker: %lld batches, %d flipped by its coin\n",
              static_cast<long long>(spec.quota), flips);
}

struct Mmc4Tally {
  std::map<std::string, int> outcomes;  // "kept" or our reason
  int coins = 0;
  double worst = 0;
};

// Every MMC4 document under every setting, through our preparer with
// `assignment`. kBestSentence (compat: openflamingo) must equal 2.0.1 on
// every document; kOneToOne (the default) on all but the hand-made documents
// marked false in kCraftedAgree, which must still differ.
void OpenFlamingoDataOracle::checkMmc4Documents(Mmc4Assignment assignment) {
  const bool compat = assignment == Mmc4Assignment::kBestSentence;
  ASSERT_EQ((*answer_)["mmc4"].size(), kSettings.size());
  for (size_t si = 0; si < kSettings.size(); ++si) {
    const Mmc4Setting& s = kSettings[si];
    SCOPED_TRACE("setting " + std::to_string(si) + ": threshold " + std::to_string(s.simThreshold) +
                 ", images " + std::to_string(s.minNumImages) + ".." + std::to_string(s.maxNumImages) +
                 ", max tokens " + std::to_string(s.maxTokens));
    Mmc4PrepareOptions po;
    po.maxTokens = s.maxTokens;
    po.imageSize = kImageSize;
    po.maxNumImages = s.maxNumImages;
    po.minNumImages = s.minNumImages;
    po.simThreshold = s.simThreshold;
    po.assignment = assignment;
    const Mmc4Preparer preparer(*tokenizer_, po);
    const int64_t imageFloats = 3 * kImageSize * kImageSize;
    Mmc4Tally tally;
    ASSERT_EQ((*answer_)["mmc4"][si].size(), mmc4_->size())
        << "the reference's reader and ours see the same documents";
    for (const json& ref : (*answer_)["mmc4"][si]) {
      const std::string key = ref["key"];
      ASSERT_TRUE(mmc4_->count(key)) << key;
      const bool crafted = key.rfind("crafted-", 0) == 0;
      const bool mustAgree = compat || !crafted || kCraftedAgree.at(key);
      const uint64_t seed = seedFor(ref["flip"], ref["single_drop"]);
      Rng rng(seed);
      std::vector<float> images(static_cast<size_t>(s.maxNumImages * imageFloats), NAN);
      SampleSlot slot{images.data(), 0, {}};
      const auto drop = preparer.prepare(mmc4_->at(key), rng, false, slot);
      // The worker zeroes the slots after those written (the reference's padding).
      std::fill(images.begin() + slot.imagesWritten * imageFloats, images.end(), 0.0f);
      const int draws = drawsSince(seed, rng);

      bool agree = true;
      bool checkOrder = false;  // the reference failed a decode, we a token rule first
      std::string ours = drop ? drop->reason : "kept";
      if (ref.contains("error")) {
        const auto reasons = reasonsFor(ref);
        agree = drop && reasons.count(drop->reason);
        // NOTE [MMC4 check order]: our token rules run before the decode, so a
        // document failing both is counted under the token rule.
        if (drop && reasons.count("bad_image") && drop->reason != "bad_image" &&
            drop->reason != "no_valid_images" && drop->reason != "below_threshold") {
          agree = checkOrder = true;
          ours = "bad_image (counted as " + ours + ", NOTE [MMC4 check order])";
        }
        if (mustAgree) {
          EXPECT_TRUE(agree) << key << ": the reference rejects (" << ref["message"].get<std::string>()
                             << "), ours: " << ours << (drop ? " " + drop->detail : "");
        }
      } else {
        agree = !drop;
        if (mustAgree) {
          ASSERT_FALSE(drop) << key << ": the reference keeps it, ours drops: " << drop->reason << " "
                             << drop->detail;
        }
        if (!drop) {
          std::vector<int64_t> ids(static_cast<size_t>(s.maxTokens), tok().padId()), mask(ids.size(), 0);
          std::copy(slot.ids.begin(), slot.ids.end(), ids.begin());
          std::fill_n(mask.begin(), slot.ids.size(), 1);
          const bool sameIds = ref["ids"].get<std::vector<int64_t>>() == ids;
          const double diff =
              pixelDiff(ref["images"], {s.maxNumImages, 3, kImageSize, kImageSize}, images.data());
          agree = sameIds && diff <= kPixelTolerance;
          if (mustAgree) {
            EXPECT_TRUE(sameIds) << key
                                 << "\n reference: " << tok().decode(ref["ids"].get<std::vector<int64_t>>())
                                 << "\n ours:      " << tok().decode(ids);
            EXPECT_EQ(ref["mask"].get<std::vector<int64_t>>(), mask) << key;
            EXPECT_LE(diff, kPixelTolerance) << key << " flip " << ref["flip"];
            tally.worst = std::max(tally.worst, diff);
          }
        }
      }
      if (mustAgree) {
        // Both draw the flip coin once a document has images to preprocess,
        // and the single-image coin exactly when the reference draws it. (A
        // document whose image does not decode: the reference stops before
        // its token rules; we run them first, NOTE [MMC4 check order].)
        const bool drewSingle = ref["drew_single_coin"];
        const bool planRejected =
            drop && (drop->reason == "no_valid_images" || drop->reason == "below_threshold");
        if (!checkOrder && (!drop || drop->reason != "bad_image")) {
          EXPECT_EQ(draws, (planRejected ? 0 : 1) + (drewSingle ? 1 : 0)) << key << ": the coins drawn";
        }
        tally.coins += drewSingle;
        ++tally.outcomes[ours];
      } else if (si == 0) {  // with truncation and min 2 images, coins and cuts may hide the difference
        const std::string theirs = ref.contains("error")
                                       ? ref["message"].get<std::string>()
                                       : tok().decode(ref["ids"].get<std::vector<int64_t>>());
        std::printf("documented difference %s:\n  OpenFlamingo 2.0.1: %s\n  ours: %s\n", key.c_str(),
                    theirs.substr(0, theirs.find("<PAD>")).c_str(),
                    drop ? ours.c_str() : tok().decode(slot.ids).c_str());
        EXPECT_FALSE(agree) << key << ": documented as differing from OpenFlamingo 2.0.1 but agrees now; "
                            << "update docs/data.md and this test";
      }
    }
    std::string summary;
    for (const auto& [what, n] : tally.outcomes) summary += " " + what + "=" + std::to_string(n);
    std::printf("MMC4 %s, setting %zu:%s; single-image coins %d; max pixel diff %.3g\n",
                compat ? "compat: openflamingo" : "default", si, summary.c_str(), tally.coins, tally.worst);
  }
}

TEST_F(OpenFlamingoDataOracle, Mmc4DocumentsMatchByDefaultExceptTheDocumentedDifferences) {
  checkMmc4Documents(Mmc4Assignment::kOneToOne);
}

// compat: openflamingo reproduces 2.0.1 on every document, the hand-made
// ones where the default differs included (NOTE [MMC4 assignment]).
TEST_F(OpenFlamingoDataOracle, Mmc4DocumentsMatchExactlyUnderCompat) {
  checkMmc4Documents(Mmc4Assignment::kBestSentence);
}

}  // namespace
}  // namespace fs::data
