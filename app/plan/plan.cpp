#include "app/plan/plan.h"

namespace fs::app {

QString PlanEstimate::label() const {
  QString out = QStringLiteral("%1 / %2").arg(strategy, policy);
  if (engine != QLatin1String("ours")) out += QStringLiteral(" (%1)").arg(engine);
  return out;
}

std::vector<PlanFigures> rankFigures(const PlanEstimate& estimate, int world) {
  std::vector<PlanFigures> out(static_cast<size_t>(world > 0 ? world : 0), estimate.perRank);
  if (estimate.units.empty()) return out;
  for (size_t r = 0; r < out.size(); ++r) {
    std::int64_t params = 0;
    for (const auto& unit : estimate.units) {
      // A list shorter than the world would be a malformed plan; the shared
      // figure is then the best there is for that rank.
      if (r >= unit.shardBytes.size()) return std::vector<PlanFigures>(out.size(), estimate.perRank);
      params += unit.shardBytes[r];
    }
    const std::int64_t delta = params - estimate.perRank.parameters;
    out[r].parameters = params;
    out[r].modelState += delta;
    out[r].peak += delta;
  }
  return out;
}

}  // namespace fs::app
