// clampToView: a polyline cut down to a box a little larger than the view.
//
// NOTE [Clamping to the view]
// Zoomed far into a curve, its neighbours lie thousands of view heights
// away; Qt's raster engine then strokes and fills paths with pixel
// coordinates in the millions, which takes minutes, not milliseconds. So
// before the buckets reach QCustomPlot, each polyline is clamped to the view
// grown by one view size on every side: vertices beyond it move onto its
// border and a vertex is added where a segment crosses it. Inside the view
// the drawing is unchanged (the clamped parts run along a border that is off
// screen), and a band stays one closed area (a gap would punch a hole in the
// fill). Works in axis space: logarithmic axes clamp in log10.
//
// Thread-safety: pure function over its arguments.
#pragma once

#include <span>
#include <vector>

namespace fs::ui {

struct ViewBox {
  double x_lower = 0, x_upper = 1;
  double y_lower = 0, y_upper = 1;
  bool log_x = false, log_y = false;  // REQUIRES: the bounds > 0 on a log axis
};

struct Polyline {
  std::vector<double> x, y;  // y NaN: a gap
};

// x non-decreasing; vertices inside the grown box keep their exact values.
void clampToView(std::span<const double> x, std::span<const double> y, const ViewBox& view, Polyline* out);

}  // namespace fs::ui
