// StallDetector: decides when a live run has gone quiet for too long.
//
// A run is stalled when its last step event is older than
// max(floor_s, factor x the median interval between recent step events). The
// interval, not step_time_s, is what matters: steps are logged every
// logging_steps steps, and that is how often a healthy run speaks. The detector
// only judges; RunMonitor feeds it times and turns its answers into signals. It
// says kStalled once per stall and kRecovered once when a step arrives after one
// (or when the run stops being live: a paused or finished run is not stalled).
//
// Thread-safety: a plain value; one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace fs::app {

struct StallOptions {
  double factor = 5;    // K: how many median intervals without a step make a stall
  double floor_s = 30;  // never sooner than this, whatever the median
};

class StallDetector {
 public:
  enum class Change { kNone, kStalled, kRecovered };

  explicit StallDetector(StallOptions options = {}) : options_(options) {}

  // `live`: the run is running and the reader has caught up with the file.
  // `lastStepMs`: time of the last step event (unix ms), none before the first.
  // `medianIntervalSeconds`: see medianInterval(); none when unknown.
  // On kStalled, *why says what was seen and what was expected.
  Change evaluate(std::int64_t nowMs, bool live, std::optional<std::int64_t> lastStepMs,
                  std::optional<std::int64_t> lastStep, std::optional<double> medianIntervalSeconds,
                  std::string* why);

  bool stalled() const { return stalled_; }
  // Seconds without a step that count as a stall for this median interval.
  double thresholdSeconds(std::optional<double> medianIntervalSeconds) const;

  // Median of the differences between consecutive values of `timesSeconds` (ascending
  // unix seconds), over at most the last `window` differences; none for < 2 values.
  static std::optional<double> medianInterval(std::span<const double> timesSeconds, std::size_t window = 100);

 private:
  StallOptions options_;
  bool stalled_ = false;
  std::optional<std::int64_t> stalled_at_step_ms_;  // last step time when the stall was declared
};

}  // namespace fs::app
