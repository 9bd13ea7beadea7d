// CurvePlot::Curve: one curve's source, caches and graphs (internal to curve_plot*.cpp).
//
// Thread-safety: GUI thread only, like CurvePlot.
#pragma once

#include <qcustomplot.h>

#include "ui/plots/column_buckets.h"
#include "ui/plots/curve_plot.h"
#include "ui/plots/minmax_pyramid.h"
#include "ui/plots/smoothing.h"

namespace fs::ui {

struct CurvePlot::Curve {
  QString name;
  CurveSource source;
  QColor color;
  bool visible = true;
  Smoother smoother;
  MinMaxPyramid raw_pyramid;     // over the raw values: the band
  MinMaxPyramid smooth_pyramid;  // over the smoothed values while smoothing is on: the line

  // The pyramid of the line's values.
  const MinMaxPyramid& linePyramid() const {
    return smoother.smoothing().active() ? smooth_pyramid : raw_pyramid;
  }
  void clearCaches() {
    smoother.reset();
    raw_pyramid.clear();
    smooth_pyramid.clear();
  }
  ColumnBuckets buckets;
  QCPGraph* line = nullptr;
  QCPGraph* low = nullptr;
  QCPGraph* high = nullptr;  // filled down to `low`: the band
};

}  // namespace fs::ui
