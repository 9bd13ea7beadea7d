#include "app/plan/estimate_comparison.h"

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <string>

#include "app/monitor/series_names.h"
#include "app/monitor/series_store.h"

namespace fs::app {
namespace {

struct PartSeries {
  const char* category;  // as in NOTE [Series names]
  std::int64_t MeasuredParts::*field;
};
constexpr std::array<PartSeries, 5> kParts = {{
    {"params", &MeasuredParts::params},
    {"grads", &MeasuredParts::grads},
    {"optimizer", &MeasuredParts::optimizer},
    {"gathered", &MeasuredParts::gathered},
    {"activations", &MeasuredParts::activations},
}};

// "memory/rank3/grads" -> 3; -1 for another series.
int rankOf(const std::string& name) {
  constexpr std::string_view prefix = "memory/rank";
  if (name.rfind(prefix, 0) != 0) return -1;
  const auto slash = name.find('/', prefix.size());
  if (slash == std::string::npos || slash == prefix.size()) return -1;
  try {
    return std::stoi(name.substr(prefix.size(), slash - prefix.size()));
  } catch (...) {
    return -1;
  }
}

std::int64_t bytes(double v) { return v == v ? static_cast<std::int64_t>(v) : 0; }  // NaN: nothing measured

}  // namespace

std::vector<MeasuredRank> measuredMemory(const SeriesStore& store) {
  std::map<int, MeasuredRank> ranks;
  for (const auto& name : store.names()) {
    const int rank = rankOf(name);
    if (rank >= 0) ranks[rank].rank = rank;
  }
  std::vector<MeasuredRank> out;
  for (auto& [rank, m] : ranks) {
    std::vector<std::int64_t> sums;  // per memory event: every part has one point per event
    bool aligned = true;
    for (const auto& part : kParts) {
      const std::string name = series::memory(rank, part.category);
      const std::span<const double> y = store.y(name);
      if (y.empty()) continue;
      m.latest.*part.field = bytes(y.back());
      std::int64_t peak = 0;
      for (double v : y) peak = std::max(peak, bytes(v));
      m.peak.*part.field = peak;
      if (sums.empty()) sums.assign(y.size(), 0);
      if (y.size() != sums.size()) aligned = false;
      for (size_t i = 0; aligned && i < y.size(); ++i) sums[i] += bytes(y[i]);
      const auto step = store.x(name, XAxis{});
      if (!step.empty()) m.step = static_cast<std::int64_t>(step.back());
    }
    m.peakSum = aligned && !sums.empty() ? *std::max_element(sums.begin(), sums.end()) : m.peak.sum();
    out.push_back(m);
  }
  return out;
}

QString comparedPartName(ComparedPart part) {
  switch (part) {
    case ComparedPart::kParameters: return QStringLiteral("parameters");
    case ComparedPart::kGradients: return QStringLiteral("gradients");
    case ComparedPart::kOptimizer: return QStringLiteral("optimizer state");
    case ComparedPart::kGathered: return QStringLiteral("gathered peak");
    case ComparedPart::kActivations: return QStringLiteral("activations");
    case ComparedPart::kPeak: return QStringLiteral("peak (sum of parts)");
  }
  return {};
}

std::vector<ComparisonRow> compareEstimate(const PlanFigures& estimate, const std::vector<MeasuredRank>& measured) {
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
  std::vector<ComparisonRow> rows;
  for (const auto& side : sides) {
    ComparisonRow row;
    row.part = side.part;
    row.estimate = side.estimate;
    for (const auto& m : measured) {
      const std::int64_t latest = side.field ? m.latest.*side.field : m.latest.sum();
      const std::int64_t peak = side.field ? m.peak.*side.field : m.peakSum;
      row.latest = std::max(row.latest.value_or(0), latest);
      row.peak = std::max(row.peak.value_or(0), peak);
    }
    if (row.peak && *row.peak > 0) {
      row.errorPercent = 100.0 * static_cast<double>(row.estimate - *row.peak) / static_cast<double>(*row.peak);
    } else if (row.peak && row.estimate == 0) {
      row.errorPercent = 0.0;
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace fs::app
