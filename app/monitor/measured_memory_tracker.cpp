#include "app/monitor/measured_memory_tracker.h"

#include <algorithm>
#include <span>
#include <string>

#include "app/monitor/series_names.h"

// NOTE [Measured memory figures]
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
//   step     the step of the latest point;
//   latestStepPeak, stepPeak
//            memory/rank<r>/step_peak's last and largest value, none without
//            points (events of an engine before schema 1.3).
// A value that is NaN counts as 0. A rank is listed once any memory/rank<r>/
// series exists, in rank order.
//
// update() folds in the points appended since the last call and drops those a
// rewind took away (NOTE [Rewinds]): it tells them apart by the store's row
// numbers, which are never reused. Its cost is O(ranks) plus the points added
// and dropped, never the history (RunningPeak keeps what a cut needs).

namespace fs::app {
void MeasuredMemoryTracker::clear() {
  ranks_.clear();
  names_seen_ = 0;
  figures_.clear();
}

void MeasuredMemoryTracker::update(const SeriesStore& store) {
  addNewRanks(store);
  figures_.clear();
  figures_.reserve(ranks_.size());
  for (auto& [rank, track] : ranks_) figures_.push_back(measure(store, rank, track));
}

void MeasuredMemoryTracker::addNewRanks(const SeriesStore& store) {
  // Names only grow until clear(), so only the new ones can name a new rank.
  const auto& names = store.names();
  for (; names_seen_ < names.size(); ++names_seen_) {
    const int rank = memorySeriesRank(names[names_seen_]);
    if (rank >= 0) ranks_.try_emplace(rank);
  }
}

std::size_t MeasuredMemoryTracker::updatePart(const SeriesStore& store, PartTrack& part) {
  const std::size_t size = store.size(part.id);
  // The points seen that a rewind kept still carry their rows; whatever sits at
  // their indices with a later row came after the rewind. Walking back over
  // those costs at most the points added since the last call.
  std::size_t kept = std::min(part.seen, size);
  while (kept > 0 && store.row(part.id, kept - 1) > part.last_row) --kept;
  part.peak.truncate(kept);
  const auto y = store.y(part.id);
  for (std::size_t i = kept; i < size; ++i) part.peak.add(i, measuredBytes(y[i]));
  part.seen = size;
  if (size > 0) part.last_row = store.row(part.id, size - 1);
  return kept;
}

MeasuredRank MeasuredMemoryTracker::measure(const SeriesStore& store, int rank, RankTrack& track) {
  MeasuredRank m;
  m.rank = rank;
  std::array<std::span<const double>, kMeasuredPartCount> y;
  std::size_t sums_kept = track.sums_seen;
  unsigned with_points = 0;
  std::size_t events = 0;  // points per part, when they agree
  bool aligned = true;
  SeriesStore::SeriesId latest_part = SeriesStore::kNoSeries;
  for (std::size_t p = 0; p < kMeasuredPartCount; ++p) {
    PartTrack& part = track.parts[p];
    if (part.id == SeriesStore::kNoSeries)
      part.id = store.find(series::memory(rank, kMeasuredParts[p].category));
    if (part.id == SeriesStore::kNoSeries) continue;
    sums_kept = std::min(sums_kept, updatePart(store, part));
    y[p] = store.y(part.id);
    if (y[p].empty()) continue;
    const auto field = kMeasuredParts[p].field;
    m.latest.*field = measuredBytes(y[p].back());
    m.peak.*field = std::max<std::int64_t>(0, part.peak.peak().value_or(0));
    if (with_points == 0)
      events = y[p].size();
    else if (y[p].size() != events)
      aligned = false;
    with_points |= 1u << p;
    latest_part = part.id;
  }
  if (latest_part != SeriesStore::kNoSeries)
    m.step = static_cast<std::int64_t>(store.x(latest_part, XAxis{}).back());
  PartTrack& stepPeak = track.step_peak;
  if (stepPeak.id == SeriesStore::kNoSeries)
    stepPeak.id = store.find(series::memory(rank, kStepPeakCategory));
  if (stepPeak.id != SeriesStore::kNoSeries) {
    updatePart(store, stepPeak);
    const auto y = store.y(stepPeak.id);
    if (!y.empty()) {
      m.latestStepPeak = measuredBytes(y.back());
      m.stepPeak = std::max<std::int64_t>(0, stepPeak.peak.peak().value_or(0));
    }
  }

  // Sums over another set of parts are other sums: start them again (the
  // builder writes every part, so this happens for a rank's first points only).
  if (with_points != track.sum_parts) {
    sums_kept = 0;
    track.sum_parts = with_points;
  }
  track.sum_peak.truncate(sums_kept);
  track.sums_seen = sums_kept;
  if (with_points != 0 && aligned) {
    for (std::size_t i = track.sums_seen; i < events; ++i) {
      std::int64_t sum = 0;
      for (std::size_t p = 0; p < kMeasuredPartCount; ++p) {
        if (with_points & (1u << p)) sum += measuredBytes(y[p][i]);
      }
      track.sum_peak.add(i, sum);
    }
    track.sums_seen = events;
    m.peakSum = *track.sum_peak.peak();
  } else {
    m.peakSum = m.peak.sum();
  }
  return m;
}

}  // namespace fs::app
