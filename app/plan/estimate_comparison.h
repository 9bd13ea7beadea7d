// Estimate vs measured: the planner's per-rank figures for a run beside what
// its `memory` events measured (docs/telemetry.md).
//
// The measured side is each rank's MeasuredRank (app/monitor/measured_memory.h,
// kept by the RunMonitor's MeasuredMemoryTracker). compareEstimate() lines them
// up with an estimate, one row per part, the measured side the largest over
// ranks (the rank that decides whether a run fits), and the error relative to
// the measured peak.
//
// Thread-safety: pure functions.
#pragma once

#include <QString>
#include <cstdint>
#include <optional>
#include <vector>

#include "app/monitor/measured_memory.h"
#include "app/plan/plan.h"

namespace fs::app {

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
std::vector<ComparisonRow> compareEstimate(const PlanFigures& estimate,
                                           const std::vector<MeasuredRank>& measured);

}  // namespace fs::app
