#include "app/monitor/stall_detector.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace fs::app {

double StallDetector::thresholdSeconds(std::optional<double> median_interval_s) const {
  const double k =
      median_interval_s && std::isfinite(*median_interval_s) ? options_.factor * *median_interval_s : 0;
  return std::max(options_.floor_s, k);
}

std::optional<double> StallDetector::medianInterval(std::span<const double> times_s, std::size_t window) {
  if (times_s.size() < 2) return std::nullopt;
  const std::size_t n = std::min(window, times_s.size() - 1);
  std::vector<double> gaps;
  gaps.reserve(n);
  for (std::size_t i = times_s.size() - n; i < times_s.size(); ++i)
    gaps.push_back(times_s[i] - times_s[i - 1]);
  auto mid = gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2);
  std::nth_element(gaps.begin(), mid, gaps.end());
  return *mid;
}

StallDetector::Change StallDetector::evaluate(std::int64_t now_ms, bool live,
                                              std::optional<std::int64_t> last_step_ms,
                                              std::optional<std::int64_t> last_step,
                                              std::optional<double> median_interval_s, std::string* why) {
  if (stalled_) {
    // A new step, or a run that is no longer live (paused, finished): the stall is over.
    if (!live || last_step_ms != stalled_at_step_ms_) {
      stalled_ = false;
      stalled_at_step_ms_.reset();
      return Change::kRecovered;
    }
    return Change::kNone;
  }
  if (!live || !last_step_ms) return Change::kNone;
  const double quiet_s = static_cast<double>(now_ms - *last_step_ms) / 1000.0;
  const double threshold = thresholdSeconds(median_interval_s);
  if (quiet_s <= threshold) return Change::kNone;
  stalled_ = true;
  stalled_at_step_ms_ = last_step_ms;
  if (why != nullptr) {
    char text[256];
    if (median_interval_s) {
      std::snprintf(
          text, sizeof text,
          "no step for %.0f s (last: step %lld); steps came every %.1f s (median), so the alert is at "
          "%.0f s (%.0f x median, at least %.0f s)",
          quiet_s, static_cast<long long>(last_step.value_or(0)), *median_interval_s, threshold,
          options_.factor, options_.floor_s);
    } else {
      std::snprintf(text, sizeof text, "no step for %.0f s (last: step %lld; alert after %.0f s)", quiet_s,
                    static_cast<long long>(last_step.value_or(0)), threshold);
    }
    *why = text;
  }
  return Change::kStalled;
}

}  // namespace fs::app
