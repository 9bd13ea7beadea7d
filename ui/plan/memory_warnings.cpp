#include "ui/plan/memory_warnings.h"

#include <algorithm>

#include "ui/plots/format_units.h"

namespace fs::ui {

std::vector<int> ranksOverDevice(const app::PlanEstimate& estimate, int world, std::int64_t deviceBytes) {
  std::vector<int> over;
  const auto ranks = app::rankFigures(estimate, world);
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].peak > deviceBytes) over.push_back(static_cast<int>(r));
  }
  return over;
}

QStringList memoryWarnings(const app::Plan& plan, std::int64_t deviceBytes) {
  QStringList out;
  for (const auto& estimate : plan.estimates) {
    const std::vector<int> over = ranksOverDevice(estimate, plan.world, deviceBytes);
    if (over.empty()) continue;
    const auto ranks = app::rankFigures(estimate, plan.world);
    std::int64_t worst = 0;
    for (int r : over) worst = std::max(worst, ranks[static_cast<size_t>(r)].peak);
    QString where;
    if (static_cast<int>(over.size()) == plan.world) {
      where = QStringLiteral("on every rank");
    } else {
      QStringList names;
      for (int r : over) names << QString::number(r);
      where = QStringLiteral("on rank%1 %2")
                  .arg(over.size() > 1 ? QStringLiteral("s") : QString(), names.join(QStringLiteral(", ")));
    }
    out << QStringLiteral("%1: peak %2 > %3 %4")
               .arg(estimate.label(), formatBytes(worst), formatBytes(deviceBytes), where);
  }
  return out;
}

}  // namespace fs::ui
