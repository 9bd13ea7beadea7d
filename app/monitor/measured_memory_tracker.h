// MeasuredMemoryTracker: each rank's measured memory, kept up to date as a
// SeriesStore grows, so that reading it costs O(ranks) however long the run.
//
// The figures (MeasuredRank, measured_memory.h) are those the Estimate tab
// compares with the planner: per rank, over the points
// the store holds for memory/rank<r>/{params, grads, optimizer, gathered,
// activations} (NOTE [Series names]),
//   latest   each part's last value, 0 for a part without points;
//   peak     each part's largest value, at least 0;
//   peakSum  the largest sum of the parts in one memory event; when the parts
//            do not have one point per event each (never from the batch
//            builder, which writes all of them per rank and event), the sum of
//            the peaks;
//   step     the step of the latest point.
// A value that is NaN counts as 0. A rank is listed once any memory/rank<r>/
// series exists, in rank order.
//
// update() folds in the points appended since the last call and drops those a
// rewind took away (NOTE [Rewinds]): it tells them apart by the store's row
// numbers, which are never reused. Its cost is O(ranks) plus the points added
// and dropped, never the history (RunningPeak keeps what a cut needs).
//
// Thread-safety: GUI thread only, like the store. Ownership: keeps no pointer
// to the store between calls.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "app/monitor/measured_memory.h"
#include "app/monitor/running_peak.h"
#include "app/monitor/series_store.h"

namespace fs::app {

inline constexpr std::size_t kMeasuredPartCount = kMeasuredParts.size();

class MeasuredMemoryTracker {
 public:
  // Catches up with `store`. REQUIRES: called after every append() to it (a
  // rewind must not hide behind a later one), and clear() with the store's.
  void update(const SeriesStore& store);
  // Forgets everything: the store was cleared for another run.
  void clear();

  // Ranks in rank order as of the last update(); empty before a memory event.
  const std::vector<MeasuredRank>& ranks() const { return figures_; }

 private:
  struct PartTrack {
    SeriesStore::SeriesId id = SeriesStore::kNoSeries;
    std::size_t seen = 0;        // points folded in
    std::uint32_t last_row = 0;  // store row of point seen - 1
    RunningPeak peak;
  };
  struct RankTrack {
    std::array<PartTrack, kMeasuredPartCount> parts;
    std::size_t sums_seen = 0;  // events whose sum of parts is folded into sum_peak
    unsigned sum_parts = 0;     // bit per part with points when those sums were taken
    RunningPeak sum_peak;
  };

  void addNewRanks(const SeriesStore& store);
  // Folds the part's new points in; returns how many of its old ones survive.
  static std::size_t updatePart(const SeriesStore& store, PartTrack& part);
  static MeasuredRank measure(const SeriesStore& store, int rank, RankTrack& track);

  std::map<int, RankTrack> ranks_;
  std::size_t names_seen_ = 0;  // store names already looked at for ranks
  std::vector<MeasuredRank> figures_;
};

}  // namespace fs::app
