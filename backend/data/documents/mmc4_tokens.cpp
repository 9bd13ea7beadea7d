#include "backend/data/documents/mmc4_tokens.h"

#include <algorithm>

namespace fs::data {

std::optional<Mmc4Reason> checkMmc4Tokens(std::span<const int64_t> ids, const Mmc4TokenRules& rules,
                                          Rng& rng) {
  const auto window = static_cast<size_t>(std::max<int64_t>(rules.maxTokens, 0));
  if (ids.size() > window) ids = ids.first(window);
  const auto images = std::count(ids.begin(), ids.end(), rules.imageTokenId);
  if (images < rules.minNumImages) return Mmc4Reason::kTooFewImages;
  if (images == 1 && rng.coin(0.5)) return Mmc4Reason::kSingleImageCoin;
  // The reference looks at the last slot of the padded tensor, so a shorter
  // text (padding there) never trips this rule.
  if (images == 1 && window > 0 && ids.size() == window && ids.back() == rules.imageTokenId)
    return Mmc4Reason::kImageLastToken;
  return std::nullopt;
}

}  // namespace fs::data
