// Mmc4Preparer on real documents written by make-synthetic: kept documents
// fill their image slots, and a document whose images cannot be decoded is
// rejected as bad_image unless a token rule rejects it first
// (NOTE [MMC4 check order]); the coins follow the same stream either way.
#include "backend/data/mmc4_preparer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/data/documents/base64.h"
#include "backend/data/shardgen/synthetic_shards.h"
#include "backend/data/shards/tar_samples.h"

namespace fs::data {
namespace {

namespace fsys = std::filesystem;

// The same document with every image replaced by zero bytes of the same
// length: as valid to MMC4's size rule, undecodable as a picture.
Sample withZeroImages(const Sample& sample) {
  const Bytes& raw = *sample.find("json");
  auto doc = nlohmann::json::parse(raw.begin(), raw.end());
  for (auto& info : doc["image_info"]) {
    const auto bytes = decodeBase64Lenient(info["image_base64"].get<std::string>());
    const size_t n = bytes.isOk() ? bytes->size() : 0;
    std::string zeros;
    for (size_t i = 0; i < n / 3; ++i) zeros += "AAAA";
    if (n % 3 == 1) zeros += "AA==";
    if (n % 3 == 2) zeros += "AAA=";
    info["image_base64"] = zeros;
  }
  Sample out = sample;
  const std::string text = doc.dump();
  out.fields["json"] = Bytes(text.begin(), text.end());
  return out;
}

TEST(Mmc4PreparerTest, TokenRulesComeBeforeDecodingAndKeptDocumentsFillTheirSlots) {
  const fsys::path dir = fsys::temp_directory_path() / ("fs_mmc4_preparer_" + std::to_string(::getpid()));
  fsys::remove_all(dir);
  SyntheticShardOptions o;
  o.outDir = dir.string();
  o.laionShards = 0;
  o.mmc4Shards = 1;
  o.mmc4DocsPerShard = 40;
  o.imageWidth = 120;
  o.imageHeight = 90;
  o.maxImagesPerDoc = 3;
  auto written = writeSyntheticShards(o);
  ASSERT_TRUE(written) << written.status().message();
  auto tok = loadTokenizer(written->tokenizerDir, "opt");
  ASSERT_TRUE(tok) << tok.status().message();
  Mmc4PrepareOptions po;
  po.imageSize = 32;
  po.maxNumImages = 3;
  po.simThreshold = 0.24;
  const Mmc4Preparer preparer(std::shared_ptr<const Tokenizer>(std::move(tok.value())), po);
  const size_t imageFloats = 3 * 32 * 32;

  auto reader = TarSampleReader::open(dir.string() + "/mmc4-000000.tar");
  ASSERT_TRUE(reader) << reader.status().message();
  int kept = 0, tokenRejected = 0;
  for (uint64_t seed = 0;; ++seed) {
    auto sample = reader->next();
    ASSERT_TRUE(sample) << sample.status().message();
    if (!sample->has_value()) break;
    std::vector<float> pixels(3 * imageFloats, -7.0f);
    SampleSlot good{pixels.data(), 0, {}};
    Rng rngGood(seed), rngBad(seed);
    const auto goodDrop = preparer.prepare(**sample, rngGood, false, good);
    std::vector<float> scratch(3 * imageFloats);
    SampleSlot bad{scratch.data(), 0, {}};
    const auto badDrop = preparer.prepare(withZeroImages(**sample), rngBad, false, bad);
    if (!goodDrop) {
      ++kept;
      ASSERT_GE(good.imagesWritten, 1);
      ASSERT_LE(good.imagesWritten, 3);
      for (int64_t i = 0; i < good.imagesWritten; ++i) {
        for (size_t k = 0; k < imageFloats; ++k)
          ASSERT_NE(pixels[i * imageFloats + k], -7.0f) << "slot " << i;
      }
      ASSERT_TRUE(badDrop);
      EXPECT_EQ(badDrop->reason, "bad_image");
    } else if (goodDrop->reason == "bad_image") {
      FAIL() << "make-synthetic wrote an undecodable picture: " << goodDrop->detail;
    } else {
      // Rejected before or by the token rules: the undecodable copy is
      // rejected for the same reason, and no slot was touched.
      ASSERT_TRUE(badDrop);
      EXPECT_EQ(badDrop->reason, goodDrop->reason);
      EXPECT_EQ(good.imagesWritten, 0);
      tokenRejected +=
          goodDrop->reason == "single_image_coin" || goodDrop->reason == "too_few_images" ? 1 : 0;
    }
    EXPECT_EQ(rngGood.nextU64(), rngBad.nextU64()) << "the two copies drew different coins";
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(tokenRejected, 0);
  fsys::remove_all(dir);
}

}  // namespace
}  // namespace fs::data
