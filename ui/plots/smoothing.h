// Smoother: a curve's smoothed values, computed incrementally and cached.
//
// See NOTE [Smoothings] in smoothing.cpp.
//
// Thread-safety: none; one owner on the GUI thread.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "ui/plots/curve_source.h"

namespace fs::ui {

enum class SmoothingKind { kNone, kEma, kTimeEma, kRunningMean };

struct Smoothing {
  SmoothingKind kind = SmoothingKind::kNone;
  // kEma: weight in [0, 1) (clamped to 0.999); kTimeEma: half-life in x units
  // (> 0); kRunningMean: window in points (>= 1, rounded). Ignored for kNone.
  double parameter = 0;

  // Whether values change at all (a weight of 0 or a window of 1 does nothing).
  bool active() const;
  bool operator==(const Smoothing&) const = default;
};

class Smoother {
 public:
  // A different setting drops the cache.
  void setSmoothing(const Smoothing& smoothing);
  const Smoothing& smoothing() const { return smoothing_; }
  void reset();

  // The values to draw for `data`: data.y itself when the smoothing is not
  // active, else the cache extended to data.size(). The span is valid until
  // the next call. REQUIRES: data extends what the previous call saw (NOTE
  // [Curve data contract]); call reset() otherwise.
  std::span<const double> update(CurveSpans data);
  std::size_t size() const { return values_.size(); }

 private:
  void extendEma(CurveSpans data);
  void extendTimeEma(CurveSpans data);
  void extendRunningMean(CurveSpans data);

  Smoothing smoothing_;
  std::vector<double> values_;
  // Running state at values_.size().
  double accumulated_ = 0;  // kEma: s; kTimeEma: sum of weighted values
  double weight_sum_ = 1;   // kTimeEma: sum of weights; kEma: w^k
  double last_x_ = 0;       // kTimeEma: x of the last finite point
  std::size_t finite_ = 0;  // kEma, kTimeEma: finite values so far
  // kRunningMean, NOTE [Window sums without subtraction]: suffix sums and
  // counts of the finite values of y[front_begin_, front_end_), and the sum
  // and count of those pushed since, y[front_end_, size()).
  std::vector<double> front_sum_;
  std::vector<std::size_t> front_count_;
  std::size_t front_begin_ = 0;
  std::size_t front_end_ = 0;
  double back_sum_ = 0;
  std::size_t back_count_ = 0;
};

}  // namespace fs::ui
