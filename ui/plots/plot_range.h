// The range policy of a fitted CurvePlot: how much room x and y get around
// the data when the plot follows it (fitToData). Plain functions, no Qt.
//
// Thread-safety: pure functions.
#pragma once

namespace fs::ui {

struct AxisRange {
  double lower = 0;
  double upper = 0;
};

// x fitted to [lower, upper], the data's extent: as it is, except one x gets
// some room (half / double on a log axis, +- 0.5 otherwise). REQUIRES: lower <= upper.
AxisRange fittedXRange(double lower, double upper, bool logAxis);

// y fitted to what is drawn in [lower, upper]: 5% of the span on either side
// (a factor on a log axis; x2 for a single value there), and at least
// 5% of the value (or 0.5 around 0) for a flat line. REQUIRES: lower <= upper,
// and 0 < lower on a log axis.
AxisRange fittedYRange(double lower, double upper, bool logAxis);

}  // namespace fs::ui
