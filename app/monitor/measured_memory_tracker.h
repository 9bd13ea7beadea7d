// MeasuredMemoryTracker: each rank's measured memory, kept up to date as a
// SeriesStore grows, so that reading it costs O(ranks) however long the run.
//
// See NOTE [Measured memory figures] in measured_memory_tracker.cpp.
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
    PartTrack step_peak;  // memory/rank<r>/step_peak
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
