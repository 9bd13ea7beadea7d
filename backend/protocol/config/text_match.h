// Closest-name suggestions for "unknown key 'x'; did you mean 'y'?" messages.
#pragma once

#include <string>
#include <vector>

namespace fs::protocol {

// Levenshtein distance (insert, delete, substitute; each cost 1).
size_t editDistance(const std::string& a, const std::string& b);

// The candidate closest to `word`, or "" when none is plausibly meant
// (distance above max(2, |word| / 3)). Ties go to the earlier candidate.
std::string closestMatch(const std::string& word, const std::vector<std::string>& candidates);

// " (did you mean 'y'?)" or "" — ready to append to a message.
std::string didYouMean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace fs::protocol
