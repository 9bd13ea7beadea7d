// The MMC4 rejection rules that look at the token ids, after the document
// text was tokenised and truncated (see mmc4_document.h for the steps before).
//
// Thread-safety: a pure function apart from advancing the Rng it is given.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "backend/data/documents/mmc4_document.h"
#include "backend/data/rng.h"

namespace fs::data {

struct Mmc4TokenRules {
  int64_t imageTokenId = 0;
  int64_t maxTokens = 256;   // the truncation / padding length
  int64_t minNumImages = 1;  // mmc4_min_num_images
};

// The post-tokenisation rules, in the reference's order, on the ids after
// truncation to maxTokens (padded or not; ids past maxTokens are ignored).
// n = number of <image> ids.
//  1. n < minNumImages                     -> kTooFewImages (no coin drawn)
//  2. n == 1: draw ONE rng.coin(0.5); true -> kSingleImageCoin
//  3. n == 1 and slot maxTokens-1 of the padded ids is <image> (only possible
//     when the text filled every slot)    -> kImageLastToken
// The coin is drawn exactly when rule 1 passes and n == 1, also for a
// document that rule 3 then rejects. nullopt: keep the document.
// n counts <image> tokens that survived truncation, not kept images: the
// images tensor keeps every kept image even when its token was cut. The
// reference draws Python's random.random() <= 0.5; we draw rng.coin(0.5)
// (< 0.5), a 2^-53 difference, and a different stream in any case.
std::optional<Mmc4Reason> checkMmc4Tokens(std::span<const int64_t> ids, const Mmc4TokenRules& rules,
                                          Rng& rng);

}  // namespace fs::data
