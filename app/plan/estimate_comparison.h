// Estimate vs measured: the planner's per-rank figures for a run beside what
// its `memory` events measured (docs/telemetry.md).
//
// measuredMemory() reads the memory/rank<r>/<part> series a RunMonitor's store
// holds (NOTE [Series names]): each rank's latest figures and the peak of each
// part over the run. compareEstimate() lines them up with an estimate, one row
// per part, the measured side the largest over ranks (the rank that decides
// whether a run fits), and the error relative to the measured peak.
//
// Thread-safety: pure functions; the store is read on its own (GUI) thread.
#pragma once

#include <QString>
#include <cstdint>
#include <optional>
#include <vector>

#include "app/plan/plan.h"

namespace fs::app {

class SeriesStore;

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
  MeasuredParts peak;       // each part's largest value over the run
  std::int64_t peakSum = 0;  // the largest sum of the parts in one event
  bool operator==(const MeasuredRank&) const = default;
};

// Ranks in rank order; empty before the first memory event.
std::vector<MeasuredRank> measuredMemory(const SeriesStore& store);

enum class ComparedPart { kParameters, kGradients, kOptimizer, kGathered, kActivations, kPeak };
// "parameters", ..., "peak (sum of parts)".
QString comparedPartName(ComparedPart part);

struct ComparisonRow {
  ComparedPart part = ComparedPart::kParameters;
  std::int64_t estimate = 0;
  std::optional<std::int64_t> latest;  // largest over ranks; none before a memory event
  std::optional<std::int64_t> peak;
  // (estimate - peak) / peak x 100: positive when the plan errs high; none
  // without a measurement or when the measured peak is 0 and the estimate is not.
  std::optional<double> errorPercent;
};

// `estimate` per rank (one rank's figures: rankFigures()), the measured ranks.
std::vector<ComparisonRow> compareEstimate(const PlanFigures& estimate, const std::vector<MeasuredRank>& measured);

}  // namespace fs::app
