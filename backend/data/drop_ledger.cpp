#include "backend/data/drop_ledger.h"

#include <algorithm>
#include <cstdio>

namespace fs::data {

bool isFilterReason(const std::string& reason) {
  static const char* const kFilters[] = {"too_few_images",  "single_image_coin", "image_last_token",
                                         "below_threshold", "no_valid_images",   "no_supervised_token"};
  for (const char* f : kFilters) {
    if (reason == f) return true;
  }
  return false;
}

void DropLedger::accept(int64_t samples) {
  std::lock_guard lock(mu_);
  counts_.accepted += samples;
}

void DropLedger::drop(const std::string& shard, const std::string& reason, const std::string& detail,
                      int64_t samples) {
  std::lock_guard lock(mu_);
  (isFilterReason(reason) ? counts_.filtered : counts_.dropped) += samples;
  counts_.byReason[reason] += samples;
  counts_.byShard[shard][reason] += samples;
  if (!detail.empty() && !isFilterReason(reason)) pushProblem(shard + ": " + reason + ": " + detail);
}

void DropLedger::note(const std::string& line) {
  std::lock_guard lock(mu_);
  pushProblem(line);
}

void DropLedger::pushProblem(std::string line) {
  if (problems_.size() == kMaxProblems) {
    problems_.pop_front();
    ++problemsLost_;
  }
  problems_.push_back(dataset_ + ": " + std::move(line));
}

int64_t DropLedger::notAccepted() const {
  std::lock_guard lock(mu_);
  return counts_.dropped + counts_.filtered;
}

DatasetDrops DropLedger::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

std::vector<std::string> DropLedger::takeProblems() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out(problems_.begin(), problems_.end());
  if (problemsLost_ > 0) {
    out.push_back(dataset_ + ": " + std::to_string(problemsLost_) + " more problem(s) not listed");
  }
  problems_.clear();
  problemsLost_ = 0;
  return out;
}

namespace {

// "a 12, b 3" for the largest entries of a count map.
std::string topEntries(const std::map<std::string, int64_t>& counts, size_t limit) {
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (size_t i = 0; i < sorted.size() && i < limit; ++i) {
    if (!out.empty()) out += ", ";
    out += sorted[i].first + " " + std::to_string(sorted[i].second);
  }
  if (sorted.size() > limit) out += ", ...";
  return out;
}

}  // namespace

protocol::Status DropLedger::checkRate(double maxPct, int64_t minSamples) const {
  {
    // Called every step: only the totals, the per-shard maps are copied on failure.
    std::lock_guard lock(mu_);
    const int64_t seen = counts_.accepted + counts_.dropped + counts_.filtered;
    if (seen < minSamples || counts_.dropRatePct() <= maxPct) return protocol::Status::ok();
  }
  const DatasetDrops c = counts();
  const int64_t seen = c.accepted + c.dropped + c.filtered;
  std::map<std::string, int64_t> perShard, bad;
  for (const auto& [shard, reasons] : c.byShard) {
    for (const auto& [reason, n] : reasons) {
      if (!isFilterReason(reason)) perShard[shard] += n;
    }
  }
  for (const auto& [reason, n] : c.byReason) {
    if (!isFilterReason(reason)) bad[reason] = n;
  }
  char rate[32], limit[32];
  std::snprintf(rate, sizeof rate, "%.2f%%", c.dropRatePct());
  std::snprintf(limit, sizeof limit, "%g%%", maxPct);
  return protocol::Status::invalidArgument(
      "dataset " + dataset_ + ": " + std::to_string(c.dropped) + " of " + std::to_string(seen) +
      " samples dropped as broken (" + rate + "), more than data.max_drop_rate_pct = " + limit +
      ". Reasons: " + topEntries(bad, 6) + ". Worst shards: " + topEntries(perShard, 3) +
      ". Check the shards with `flamingo-train shards validate`.");
}

}  // namespace fs::data
