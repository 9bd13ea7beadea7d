// The post-tokenisation MMC4 rules: their order, when the coin is drawn, and
// what "last token" means for a padded window.
#include "backend/data/documents/mmc4_tokens.h"

#include <gtest/gtest.h>

#include <vector>

namespace fs::data {
namespace {

constexpr int64_t kImg = 99, kPad = 0;
const Mmc4TokenRules kRules{kImg, /*maxTokens=*/8, /*minNumImages=*/1};

// True when checking `ids` consumed exactly `draws` coins of `rng`.
bool drew(const Rng& before, const Rng& after, int draws) {
  Rng replay = before;
  for (int i = 0; i < draws; ++i) replay.coin(0.5);
  return replay.state() == after.state();
}

TEST(Mmc4TokensTest, TooFewImagesDrawsNoCoin) {
  Rng rng(1);
  const Rng before = rng;
  const std::vector<int64_t> none = {5, 6, 7, kPad};
  EXPECT_EQ(checkMmc4Tokens(none, kRules, rng), Mmc4Reason::kTooFewImages);
  const std::vector<int64_t> one = {kImg, 6, 7, kPad};
  EXPECT_EQ(checkMmc4Tokens(one, {kImg, 8, 2}, rng), Mmc4Reason::kTooFewImages);
  EXPECT_TRUE(drew(before, rng, 0));
  // min 0: a document without images is kept, and no coin is drawn.
  EXPECT_EQ(checkMmc4Tokens(none, {kImg, 8, 0}, rng), std::nullopt);
  EXPECT_TRUE(drew(before, rng, 0));
}

TEST(Mmc4TokensTest, TwoImagesKeptWithoutCoin) {
  Rng rng(2);
  const Rng before = rng;
  const std::vector<int64_t> ids = {kImg, 1, kImg, 2, 3, 4, 5, kImg};  // even with <image> last
  EXPECT_EQ(checkMmc4Tokens(ids, kRules, rng), std::nullopt);
  EXPECT_TRUE(drew(before, rng, 0));
}

TEST(Mmc4TokensTest, SingleImageCoinIsOneSeededDraw) {
  const std::vector<int64_t> ids = {kImg, 1, 2, 3, kPad, kPad, kPad, kPad};
  Rng a(42), b(42);
  int rejected = 0;
  for (int i = 0; i < 400; ++i) {
    const Rng before = a;
    const auto ra = checkMmc4Tokens(ids, kRules, a);
    EXPECT_EQ(ra, checkMmc4Tokens(ids, kRules, b));
    EXPECT_TRUE(drew(before, a, 1));
    Rng expected = before;
    EXPECT_EQ(ra == Mmc4Reason::kSingleImageCoin, expected.coin(0.5));
    if (ra)
      ++rejected;
    else
      EXPECT_EQ(ra, std::nullopt);
  }
  EXPECT_GT(rejected, 150);
  EXPECT_LT(rejected, 250);
}

TEST(Mmc4TokensTest, ImageInLastSlotOfFullWindow) {
  // Full window, the only <image> in the last slot: rejected by rule 3 when
  // the coin (still drawn first) keeps it.
  const std::vector<int64_t> full = {1, 2, 3, 4, 5, 6, 7, kImg};
  bool sawCoin = false, sawLast = false;
  for (uint64_t seed = 0; seed < 32; ++seed) {
    Rng rng(seed), peek(seed);
    const bool coin = peek.coin(0.5);
    const auto r = checkMmc4Tokens(full, kRules, rng);
    EXPECT_EQ(r, coin ? Mmc4Reason::kSingleImageCoin : Mmc4Reason::kImageLastToken);
    EXPECT_TRUE(drew(Rng(seed), rng, 1));
    (coin ? sawCoin : sawLast) = true;
  }
  EXPECT_TRUE(sawCoin && sawLast);
  EXPECT_STREQ(mmc4ReasonName(Mmc4Reason::kImageLastToken), "image_last_token");

  // A shorter text has padding in the last slot: never rule 3.
  for (uint64_t seed = 0; seed < 32; ++seed) {
    Rng rng(seed);
    const std::vector<int64_t> shortIds = {1, 2, kImg};
    EXPECT_NE(checkMmc4Tokens(shortIds, kRules, rng), Mmc4Reason::kImageLastToken);
  }
}

TEST(Mmc4TokensTest, OnlyTheTruncatedWindowCounts) {
  // The second <image> lies past maxTokens: one image, in the last slot.
  const std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6, 7, kImg, kImg, 9};
  Rng rng(5), peek(5);
  const bool coin = peek.coin(0.5);
  EXPECT_EQ(checkMmc4Tokens(ids, kRules, rng),
            coin ? Mmc4Reason::kSingleImageCoin : Mmc4Reason::kImageLastToken);
  Rng rng2(5);
  EXPECT_EQ(checkMmc4Tokens(ids, {kImg, 10, 1}, rng2), std::nullopt);  // both counted: kept
}

}  // namespace
}  // namespace fs::data
