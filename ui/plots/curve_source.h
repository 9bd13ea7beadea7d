// CurveSource: how a plot reads one curve's data without owning or copying it.
//
// NOTE [Curve data contract]
// A curve is two equal-length contiguous arrays, x and y. They grow by
// appending on the GUI thread and are never modified otherwise: values already
// handed out keep their index and their value. x is non-decreasing; y may hold
// NaN (or +-inf), which the plot draws as a gap. The arrays may be reallocated
// when they grow, so a reader asks the source for fresh spans each time it
// reads and never keeps them across a return to the event loop.
//
// The owner of the arrays (the series store) tells the plot "new points may be
// there" through CurvePlot::dataGrew(); anything else (another x axis chosen,
// a run re-opened) is a wholesale reset: CurvePlot::resetData(), after which
// the plot reads every point again. A source whose x shrinks is treated as a
// reset too.
//
// Ownership: the plot keeps the CurveSource (and what it captures) until the
// curve is removed; the arrays stay the caller's and must outlive the curve.
//
// Thread-safety: a CurveSource is called on the GUI thread only, like the
// arrays it returns.
#pragma once

#include <cstddef>
#include <functional>
#include <span>

namespace fs::ui {

struct CurveSpans {
  std::span<const double> x;  // non-decreasing
  std::span<const double> y;  // same length as x; NaN = gap
  std::size_t size() const { return x.size() < y.size() ? x.size() : y.size(); }
};

// Returns the curve's current arrays; cheap (called on every redraw).
using CurveSource = std::function<CurveSpans()>;

}  // namespace fs::ui
