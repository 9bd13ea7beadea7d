#include "ui/monitor/rollback_marks.h"

#include <optional>

#include "app/monitor/series_names.h"

namespace fs::ui {
namespace {

// The spike's x on `axis` from the abandoned points of its dataset's loss.
std::optional<double> spikeX(const app::SeriesStore& store, const protocol::RollbackEvent& r,
                             const app::XAxis& axis) {
  const auto id = store.find(app::series::loss(r.dataset));
  if (id == app::SeriesStore::kNoSeries) return std::nullopt;
  for (std::size_t k = 0; k < store.abandonedCount(id); ++k) {
    const auto steps = store.abandonedX(id, k, {app::XKind::kStep, {}});
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (steps[i] == static_cast<double>(r.step)) return store.abandonedX(id, k, axis)[i];
    }
  }
  return std::nullopt;
}

}  // namespace

QString abandonedCurveName(const QString& base, std::size_t k) {
  return QStringLiteral("%1 \u00b7 abandoned %2").arg(base).arg(k + 1);
}

int addAbandonedCurves(CurvePlot* plot, const app::SeriesStore* store, const std::string& series,
                       const QString& base, const QColor& color, std::function<app::XAxis()> axis) {
  const auto id = store->find(series);
  if (id == app::SeriesStore::kNoSeries) return 0;
  int added = 0;
  for (std::size_t k = 0; k < store->abandonedCount(id); ++k) {
    const QString name = abandonedCurveName(base, k);
    if (plot->hasCurve(name)) continue;
    plot->addCurve(
        name,
        [store, id, k, axis] {
          return CurveSpans{store->abandonedX(id, k, axis()), store->abandonedY(id, k)};
        },
        color);
    plot->setCurveDimmed(name, true);
    ++added;
  }
  return added;
}

std::vector<PlotMarker> rollbackMarkers(const app::SeriesStore& store,
                                        const std::vector<app::RunMonitor::Rollback>& rollbacks,
                                        const app::XAxis& axis) {
  std::vector<PlotMarker> out;
  for (const auto& rb : rollbacks) {
    std::optional<double> x;
    switch (axis.kind) {
      case app::XKind::kStep:
        x = static_cast<double>(rb.event.step);
        break;
      case app::XKind::kWallTime:
        x = static_cast<double>(rb.t_ms) / 1000.0;
        break;
      case app::XKind::kRelativeTime:
        x = static_cast<double>(rb.t_ms - store.firstEventMs().value_or(rb.t_ms)) / 1000.0;
        break;
      case app::XKind::kSamples:
      case app::XKind::kTokens:
        x = spikeX(store, rb.event, axis);
        break;
    }
    if (!x) continue;
    PlotMarker m;
    m.x = *x;
    m.label = QStringLiteral("rollback %1\u2192%2").arg(rb.event.step).arg(rb.event.to_step);
    out.push_back(m);
  }
  return out;
}

}  // namespace fs::ui
