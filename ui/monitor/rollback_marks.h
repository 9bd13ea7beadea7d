// How rollbacks show on a curve plot: the abandoned segments of a series as dimmed
// curves, and a marker per rollback. Shared by the monitor's loss plot and Compare.
//
// Thread-safety: GUI thread only. The curves read the store through their sources;
// the store must outlive them.
#pragma once

#include <QColor>
#include <QString>
#include <functional>
#include <string>
#include <vector>

#include "app/monitor/run_monitor.h"
#include "app/monitor/series_store.h"
#include "ui/plots/curve_plot.h"

namespace fs::ui {

// "<base> · abandoned <k + 1>".
QString abandonedCurveName(const QString& base, std::size_t k);

// Adds to `plot` a dimmed curve (colour `color`) for each abandoned segment of
// `series` it does not show yet, read along `axis()`. Returns how many it added.
int addAbandonedCurves(CurvePlot* plot, const app::SeriesStore* store, const std::string& series,
                       const QString& base, const QColor& color, std::function<app::XAxis()> axis);

// One marker per rollback at the spike's x on `axis`: its step, its event time, or
// (samples, tokens) the spike's point in the abandoned segments of the spiking
// dataset's loss; a rollback whose x is not known there gets none.
std::vector<PlotMarker> rollbackMarkers(const app::SeriesStore& store,
                                        const std::vector<app::RunMonitor::Rollback>& rollbacks,
                                        const app::XAxis& axis);

}  // namespace fs::ui
