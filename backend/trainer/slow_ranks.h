// NOTE [Slow ranks]: in a synchronous run every rank waits for the slowest,
// so wall step times are equal everywhere; what differs is each rank's own
// work (its step time less the time it waited on the others). A rank whose
// work exceeds 1.5x the median is slow. The median is the lower one for an
// even count, so with two ranks the slower is compared with the faster.
// A rank is reported when it becomes slow, and again only after it
// recovered in between.
//
// Thread-safety: pure function over the caller's state.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

namespace fs::trainer {

inline constexpr double kSlowRankFactor = 1.5;

// `work[r]` is rank r's own work per step. Updates `flagged` (ranks reported
// and not yet recovered) and returns the ranks that just became slow;
// `median` receives the median work.
std::vector<int64_t> updateSlowRanks(const std::vector<double>& work, std::set<int64_t>* flagged,
                                     double* median);

}  // namespace fs::trainer
