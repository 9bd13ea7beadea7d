#include "backend/trainer/slow_ranks.h"

#include <algorithm>

namespace fs::trainer {

std::vector<int64_t> updateSlowRanks(const std::vector<double>& work, std::set<int64_t>* flagged,
                                     double* median) {
  std::vector<int64_t> became;
  if (work.empty()) return became;
  std::vector<double> sorted = work;
  std::sort(sorted.begin(), sorted.end());
  const double m = sorted[(sorted.size() - 1) / 2];
  if (median) *median = m;
  for (int64_t r = 0; r < static_cast<int64_t>(work.size()); ++r) {
    const bool slow = m > 0 && work[static_cast<size_t>(r)] > kSlowRankFactor * m;
    if (slow && flagged->insert(r).second) became.push_back(r);
    if (!slow) flagged->erase(r);
  }
  return became;
}

}  // namespace fs::trainer
