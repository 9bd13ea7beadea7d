// Estimate vs measured: the planner's per-rank figures for a run beside what
// its `memory` events measured (docs/telemetry.md).
//
// The measured side is each rank's MeasuredRank (app/monitor/measured_memory.h,
// kept by the RunMonitor's MeasuredMemoryTracker). compareEstimate() lines them
// up with an estimate, one row per part, the measured side the largest over
// ranks (the rank that decides whether a run fits), and the error relative to
// the measured peak.
//
// NOTE [The peak row's measured side]
// The planner's peak is the most live tensor bytes on a rank in one step: model
// state, the step's batches and its highest moment (activations, gathered
// units, gradients in flight, temporaries). The memory events' parts leave the
// batches and temporaries out, so their sum reads low (the tab said +9.9 % on
// a plain tiny run where the planner is within 3.2 %). Since telemetry schema
// 1.3 each rank entry carries step_peak, the memory tracker's highest live
// bytes of the step (the figure fsdp_peak_probe reads, NOTE [Measured peak per
// rank] in bench/fsdp/peak_probe.cpp): the peak row measures that when every
// rank has one, and falls back to the largest sum of the parts in one event for
// runs of an older engine (ComparisonRow::stepPeak says which).
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
// "parameters", ..., "peak".
QString comparedPartName(ComparedPart part);

struct ComparisonRow {
  ComparedPart part = ComparedPart::kParameters;
  std::int64_t estimate = 0;
  std::optional<std::int64_t> latest;  // largest over ranks; none before a memory event
  std::optional<std::int64_t> peak;
  // (estimate - peak) / peak x 100: positive when the plan errs high; none
  // without a measurement or when the measured peak is 0 and the estimate is not.
  std::optional<double> errorPercent;
  // The peak row: measured is the step peak (every measured rank carried one),
  // not the sum of the parts.
  bool stepPeak = false;
};

// `estimate` per rank (one rank's figures: rankFigures()), the measured ranks.
std::vector<ComparisonRow> compareEstimate(const PlanFigures& estimate,
                                           const std::vector<MeasuredRank>& measured);

}  // namespace fs::app
