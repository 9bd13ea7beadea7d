// A rank's measured memory, the parts the planner also estimates, read from
// the memory/rank<r>/<part> series of a SeriesStore (NOTE [Series names]).
// MeasuredMemoryTracker keeps them up to date; the Estimate tab compares them
// with the plan (app/plan/estimate_comparison.h).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace fs::app {

// One rank's figures, bytes.
struct MeasuredParts {
  std::int64_t params = 0;
  std::int64_t grads = 0;
  std::int64_t optimizer = 0;
  std::int64_t gathered = 0;
  std::int64_t activations = 0;
  std::int64_t sum() const { return params + grads + optimizer + gathered + activations; }
  bool operator==(const MeasuredParts&) const = default;
};

struct MeasuredRank {
  int rank = 0;
  std::int64_t step = 0;  // of the latest memory event
  MeasuredParts latest;
  MeasuredParts peak;        // each part's largest value over the run
  std::int64_t peakSum = 0;  // the largest sum of the parts in one event
  // The memory events' step_peak (schema 1.3: the highest live tensor bytes of
  // the event's step, batches included): the last and the largest; none when
  // no event of the rank carried one (an older engine).
  std::optional<std::int64_t> latestStepPeak;
  std::optional<std::int64_t> stepPeak;
  bool operator==(const MeasuredRank&) const = default;
};

// The parts with their series categories, in the planner's order.
struct MeasuredPartSeries {
  std::string_view category;
  std::int64_t MeasuredParts::*field;
};
inline constexpr std::string_view kStepPeakCategory = "step_peak";
inline constexpr std::array<MeasuredPartSeries, 5> kMeasuredParts = {{
    {"params", &MeasuredParts::params},
    {"grads", &MeasuredParts::grads},
    {"optimizer", &MeasuredParts::optimizer},
    {"gathered", &MeasuredParts::gathered},
    {"activations", &MeasuredParts::activations},
}};

// "memory/rank3/grads" -> 3; -1 for another series or a rank that is not a
// non-negative int.
inline int memorySeriesRank(std::string_view name) {
  constexpr std::string_view prefix = "memory/rank";
  if (!name.starts_with(prefix)) return -1;
  name.remove_prefix(prefix.size());
  const auto slash = name.find('/');
  if (slash == std::string_view::npos || slash == 0) return -1;
  int rank = -1;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + slash, rank);
  return ec == std::errc() && end == name.data() + slash ? rank : -1;
}

// A memory point's bytes; NaN (nothing measured) counts as 0.
inline std::int64_t measuredBytes(double v) {
  return v == v ? static_cast<std::int64_t>(v) : 0;
}

}  // namespace fs::app
