#include "app/plan/estimate_comparison.h"

#include <algorithm>
#include <array>

namespace fs::app {

QString comparedPartName(ComparedPart part) {
  switch (part) {
    case ComparedPart::kParameters:
      return QStringLiteral("parameters");
    case ComparedPart::kGradients:
      return QStringLiteral("gradients");
    case ComparedPart::kOptimizer:
      return QStringLiteral("optimizer state");
    case ComparedPart::kGathered:
      return QStringLiteral("gathered peak");
    case ComparedPart::kActivations:
      return QStringLiteral("activations");
    case ComparedPart::kPeak:
      return QStringLiteral("peak");
  }
  return {};
}

std::vector<ComparisonRow> compareEstimate(const PlanFigures& estimate,
                                           const std::vector<MeasuredRank>& measured) {
  struct Side {
    ComparedPart part;
    std::int64_t estimate;
    std::int64_t MeasuredParts::*field;  // nullptr: the peak row
  };
  const std::array<Side, 6> sides = {{
      {ComparedPart::kParameters, estimate.parameters, &MeasuredParts::params},
      {ComparedPart::kGradients, estimate.gradients, &MeasuredParts::grads},
      {ComparedPart::kOptimizer, estimate.optimizer, &MeasuredParts::optimizer},
      {ComparedPart::kGathered, estimate.gatheredPeak, &MeasuredParts::gathered},
      {ComparedPart::kActivations, estimate.activations, &MeasuredParts::activations},
      {ComparedPart::kPeak, estimate.peak, nullptr},
  }};
  // The step peak only when every rank has one: a maximum over some ranks' step
  // peaks and other ranks' sums would be neither.
  const bool stepPeak = !measured.empty() && std::all_of(measured.begin(), measured.end(), [](const auto& m) {
    return m.stepPeak.has_value() && m.latestStepPeak.has_value();
  });
  std::vector<ComparisonRow> rows;
  for (const auto& side : sides) {
    ComparisonRow row;
    row.part = side.part;
    row.estimate = side.estimate;
    row.stepPeak = !side.field && stepPeak;
    for (const auto& m : measured) {
      const std::int64_t latest = side.field     ? m.latest.*side.field
                                  : row.stepPeak ? *m.latestStepPeak
                                                 : m.latest.sum();
      const std::int64_t peak = side.field ? m.peak.*side.field : row.stepPeak ? *m.stepPeak : m.peakSum;
      row.latest = std::max(row.latest.value_or(0), latest);
      row.peak = std::max(row.peak.value_or(0), peak);
    }
    if (row.peak && *row.peak > 0) {
      row.errorPercent =
          100.0 * static_cast<double>(row.estimate - *row.peak) / static_cast<double>(*row.peak);
    } else if (row.peak && row.estimate == 0) {
      row.errorPercent = 0.0;
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace fs::app
