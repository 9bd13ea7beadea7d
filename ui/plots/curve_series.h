// CurveSeries: one curve's data model for drawing, without widgets: its
// source, the incremental smoothing and min / max pyramids over it, and the
// column buckets made from them for a view (NOTE [Level of detail] in
// minmax_pyramid.h). CurvePlot owns one per curve and draws its buckets.
//
// Thread-safety: GUI thread only, like the source it reads (NOTE [Curve data
// contract] in curve_source.h).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "ui/plots/column_buckets.h"
#include "ui/plots/curve_source.h"
#include "ui/plots/minmax_pyramid.h"
#include "ui/plots/smoothing.h"

namespace fs::ui {

class CurveSeries {
 public:
  // A new source drops every cache.
  void setSource(CurveSource source);
  bool hasSource() const { return bool(source_); }
  // A different smoothing drops the smoothed cache; the raw pyramid stays.
  void setSmoothing(const Smoothing& smoothing);
  // Drops every cache: the source's arrays were replaced.
  void clearCaches();

  // Takes in the points appended since the last call; a source that shrank
  // was replaced (NOTE [Curve data contract]): read again from the start.
  void sync();
  // The source's arrays as they are now (empty without a source).
  CurveSpans raw() const;
  // The points taken in so far, with the line's values (smoothed when a
  // smoothing is on). Valid until the next call.
  CurveSpans drawn();

  // sync(), then one bucket per column between `edges`.
  void bucket(std::span<const double> edges, const BucketOptions& options);
  void clearBuckets() { buckets_.clear(); }
  const ColumnBuckets& buckets() const { return buckets_; }

  // The index of the last drawable line value at x or before it (not NaN;
  // > 0 when positiveY); MinMaxPyramid::npos when there is none. Call sync() first.
  std::size_t lastDrawableAt(double x, bool positiveY);
  // The x extent of the drawn points (only x > 0 when positiveX); false when none.
  bool xExtent(bool positiveX, double* lower, double* upper);
  // Widens [*lower, *upper] by the buckets (band and line) whose x lies in [xLower, xUpper].
  void widenYExtent(double xLower, double xUpper, double* lower, double* upper) const;

 private:
  const MinMaxPyramid& linePyramid() const {
    return smoother_.smoothing().active() ? smooth_pyramid_ : raw_pyramid_;
  }

  CurveSource source_;
  Smoother smoother_;
  MinMaxPyramid raw_pyramid_;     // over the raw values: the band
  MinMaxPyramid smooth_pyramid_;  // over the smoothed values while smoothing is on: the line
  ColumnBuckets buckets_;
};

}  // namespace fs::ui
