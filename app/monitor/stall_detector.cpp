#include "app/monitor/stall_detector.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace fs::app {

double StallDetector::thresholdSeconds(std::optional<double> medianIntervalSeconds) const {
  const double k = medianIntervalSeconds && std::isfinite(*medianIntervalSeconds)
                       ? options_.factor * *medianIntervalSeconds
                       : 0;
  return std::max(options_.floor_s, k);
}

std::optional<double> StallDetector::medianInterval(std::span<const double> timesSeconds,
                                                    std::size_t window) {
  if (timesSeconds.size() < 2) return std::nullopt;
  const std::size_t n = std::min(window, timesSeconds.size() - 1);
  std::vector<double> gaps;
  gaps.reserve(n);
  for (std::size_t i = timesSeconds.size() - n; i < timesSeconds.size(); ++i)
    gaps.push_back(timesSeconds[i] - timesSeconds[i - 1]);
  auto mid = gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2);
  std::nth_element(gaps.begin(), mid, gaps.end());
  return *mid;
}

StallDetector::Change StallDetector::evaluate(std::int64_t nowMs, bool live,
                                              std::optional<std::int64_t> lastStepMs,
                                              std::optional<std::int64_t> lastStep,
                                              std::optional<double> medianIntervalSeconds, std::string* why) {
  if (stalled_) {
    // A new step, or a run that is no longer live (paused, finished): the stall is over.
    if (!live || lastStepMs != stalled_at_step_ms_) {
      stalled_ = false;
      stalled_at_step_ms_.reset();
      return Change::kRecovered;
    }
    return Change::kNone;
  }
  if (!live || !lastStepMs) return Change::kNone;
  const double quiet_s = static_cast<double>(nowMs - *lastStepMs) / 1000.0;
  const double threshold = thresholdSeconds(medianIntervalSeconds);
  if (quiet_s <= threshold) return Change::kNone;
  stalled_ = true;
  stalled_at_step_ms_ = lastStepMs;
  if (why != nullptr) {
    char text[256];
    if (medianIntervalSeconds) {
      std::snprintf(
          text, sizeof text,
          "no step for %.0f s (last: step %lld); steps came every %.1f s (median), so the alert is at "
          "%.0f s (%.0f x median, at least %.0f s)",
          quiet_s, static_cast<long long>(lastStep.value_or(0)), *medianIntervalSeconds, threshold,
          options_.factor, options_.floor_s);
    } else {
      std::snprintf(text, sizeof text, "no step for %.0f s (last: step %lld; alert after %.0f s)", quiet_s,
                    static_cast<long long>(lastStep.value_or(0)), threshold);
    }
    *why = text;
  }
  return Change::kStalled;
}

}  // namespace fs::app
