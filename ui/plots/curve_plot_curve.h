// CurvePlot::Curve: one curve's data model (CurveSeries), style and graphs
// (internal to curve_plot*.cpp).
//
// Thread-safety: GUI thread only, like CurvePlot.
#pragma once

#include <qcustomplot.h>

#include "ui/plots/curve_plot.h"
#include "ui/plots/curve_series.h"

namespace fs::ui {

struct CurvePlot::Curve {
  QString name;
  QColor color;
  bool visible = true;
  bool dimmed = false;  // dashed, faint, not in the legend
  CurveSeries series;
  QCPGraph* line = nullptr;
  QCPGraph* low = nullptr;
  QCPGraph* high = nullptr;  // filled down to `low`: the band
};

}  // namespace fs::ui
