#include "backend/protocol/config/text_match.h"

#include <algorithm>
#include <cctype>

namespace fs::protocol {

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closestMatch(const std::string& word, const std::vector<std::string>& candidates) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    std::replace(s.begin(), s.end(), '-', '_');
    return s;
  };
  const std::string w = lower(word);
  const size_t limit = std::max<size_t>(2, w.size() / 3);
  std::string best;
  size_t bestDistance = limit + 1;
  for (const auto& c : candidates) {
    const std::string lc = lower(c);
    size_t d = editDistance(w, lc);
    // A key that contains the word (or vice versa) is a likely intent: "batch" -> "batch_size".
    if (d > limit && w.size() >= 3 && (lc.find(w) != std::string::npos || w.find(lc) != std::string::npos)) {
      d = limit;
    }
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best;
}

std::string didYouMean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string best = closestMatch(word, candidates);
  return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

}  // namespace fs::protocol
