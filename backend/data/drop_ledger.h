// Samples a dataset's workers accepted and dropped, per shard and reason, and
// the rule that stops a run whose data is bad.
//
// OpenFlamingo logs "Ignoring" and trains on, even when every sample is bad;
// we count each drop under a stable reason name (corrupt_tar, bad_image,
// bad_base64, too_few_images, below_threshold, no_supervised_token, ...),
// send the counts as data_stats telemetry and fail the run with a message
// naming the worst reasons and shards once the drop rate passes
// data.max_drop_rate_pct.
//
// Thread-safety: all members are safe to call from any thread (one mutex;
// workers record at most once per sample, far below contention).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::data {

// NOTE [Bad vs filtered]: MMC4's rules reject many sound documents by design
// (the single-image coin alone drops half of the one-image documents), so a
// rejection by rule is "filtered", not "dropped": both are counted per reason
// and shard, only dropped samples (broken data) count against the drop rate.
bool isFilterReason(const std::string& reason);

struct DatasetDrops {
  int64_t accepted = 0;
  int64_t dropped = 0;   // broken data: corrupt_tar, bad_image, bad_base64, ...
  int64_t filtered = 0;  // rejected by a dataset rule: too_few_images, below_threshold, ...
  std::map<std::string, int64_t> byReason;
  std::map<std::string, std::map<std::string, int64_t>> byShard;  // shard -> reason -> count

  double dropRatePct() const {
    const int64_t seen = accepted + dropped + filtered;
    return seen == 0 ? 0.0 : 100.0 * static_cast<double>(dropped) / static_cast<double>(seen);
  }
};

class DropLedger {
 public:
  explicit DropLedger(std::string dataset) : dataset_(std::move(dataset)) {}

  void accept(int64_t samples = 1);
  // `detail` (e.g. what the decoder said) goes to the problem log.
  void drop(const std::string& shard, const std::string& reason, const std::string& detail = {},
            int64_t samples = 1);

  // A problem line that drops nothing by itself (already counted).
  void note(const std::string& line);

  DatasetDrops counts() const;
  // dropped + filtered, without copying the per-shard maps.
  int64_t notAccepted() const;
  // Problem lines recorded since the last call (bounded: the oldest are lost
  // first, and the loss itself is reported).
  std::vector<std::string> takeProblems();

  // Fails when more than `maxPct` percent of the samples seen so far were
  // dropped, once at least `minSamples` were seen (one bad sample among the
  // first ten is no verdict on a dataset).
  protocol::Status checkRate(double maxPct, int64_t minSamples) const;

  const std::string& dataset() const { return dataset_; }

 private:
  static constexpr size_t kMaxProblems = 256;
  void pushProblem(std::string line);  // REQUIRES: mu_ held

  const std::string dataset_;
  mutable std::mutex mu_;
  DatasetDrops counts_;
  std::deque<std::string> problems_;
  int64_t problemsLost_ = 0;
};

}  // namespace fs::data
