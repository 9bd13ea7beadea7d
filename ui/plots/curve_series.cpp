#include "ui/plots/curve_series.h"

#include <algorithm>
#include <cmath>

namespace fs::ui {

void CurveSeries::setSource(CurveSource source) {
  source_ = std::move(source);
  clearCaches();
}

void CurveSeries::setSmoothing(const Smoothing& smoothing) {
  smoother_.setSmoothing(smoothing);
  smooth_pyramid_.clear();  // it summarised the old values; the raw one stays
}

void CurveSeries::clearCaches() {
  smoother_.reset();
  raw_pyramid_.clear();
  smooth_pyramid_.clear();
}

CurveSpans CurveSeries::raw() const {
  return source_ ? source_() : CurveSpans{};
}

void CurveSeries::sync() {
  const CurveSpans data = raw();
  if (data.size() < raw_pyramid_.size()) clearCaches();  // shrunk: replaced (NOTE [Curve data contract])
  raw_pyramid_.update(data.y.first(data.size()));
  if (smoother_.smoothing().active()) smooth_pyramid_.update(smoother_.update(data));
}

CurveSpans CurveSeries::drawn() {
  const CurveSpans data = raw();
  const std::size_t n = std::min(data.size(), linePyramid().size());
  return {data.x.first(n), smoother_.update(data).first(n)};
}

void CurveSeries::bucket(std::span<const double> edges, const BucketOptions& options) {
  sync();
  const CurveSpans line = drawn();
  const CurveSpans data = raw();
  const BucketSource source{line.x, line.y, &linePyramid(), data.y.first(line.size()), &raw_pyramid_};
  bucketColumns(source, edges, options, &buckets_);
}

std::size_t CurveSeries::lastDrawableAt(double x, bool positiveY) {
  const CurveSpans line = drawn();
  const std::size_t end = std::size_t(std::upper_bound(line.x.begin(), line.x.end(), x) - line.x.begin());
  return linePyramid().lastDrawable(line.y, 0, end, positiveY);
}

bool CurveSeries::xExtent(bool positiveX, double* lower, double* upper) {
  const CurveSpans line = drawn();
  auto first = line.x.begin();
  if (positiveX) first = std::upper_bound(line.x.begin(), line.x.end(), 0.0);
  if (first == line.x.end()) return false;
  *lower = *first;
  *upper = line.x.back();
  return true;
}

void CurveSeries::widenYExtent(double xLower, double xUpper, double* lower, double* upper) const {
  const ColumnBuckets& b = buckets_;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (b.x[i] < xLower || b.x[i] > xUpper || std::isnan(b.line[i])) continue;  // neighbours are off-screen
    // With smoothing the line is not inside the raw band everywhere.
    *lower = std::min({*lower, b.low[i], b.line[i]});
    *upper = std::max({*upper, b.high[i], b.line[i]});
  }
}

}  // namespace fs::ui
