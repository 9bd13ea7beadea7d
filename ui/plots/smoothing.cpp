#include "ui/plots/smoothing.h"

#include <algorithm>
#include <cmath>
#include <limits>

// NOTE [Smoothings]
// Three smoothings, applied before level-of-detail bucketing to the values
// the line follows (the band behind it keeps the raw min / max):
//  - kEma: TensorBoard's debiased exponential moving average. With weight w,
//    s_i = w * s_{i-1} + (1 - w) * y_i from s_0 = 0, shown as s_i / (1 - w^k)
//    where k counts the finite values so far; the debias removes the pull
//    towards 0 at the start. w in [0, 0.999] (TensorBoard's slider range).
//  - kTimeEma: an EMA over x rather than over points: each earlier point's
//    weight halves every `half_life` x units, v_n = sum_i w_i y_i / sum_i w_i
//    with w_i = 2^-((x_n - x_i) / half_life). Irregularly spaced points (wall
//    time, samples seen) are weighted by distance; points at the same x count
//    equally.
//  - kRunningMean: the mean of the finite values among the last `window`
//    points (the point itself included).
// Non-finite values stay gaps and do not enter the averages.
//
// update() extends the cache over the points appended since the last call
// (O(new points)); changing the setting or reset() starts again from the
// first point.

namespace fs::ui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kMaxEmaWeight = 0.999;

bool finite(double v) {
  return v - v == 0;
}

std::size_t windowPoints(double parameter) {
  return parameter < 1 ? 1 : std::size_t(std::llround(parameter));
}

}  // namespace

bool Smoothing::active() const {
  switch (kind) {
    case SmoothingKind::kNone:
      return false;
    case SmoothingKind::kEma:
      return parameter > 0;
    case SmoothingKind::kTimeEma:
      return parameter > 0 && finite(parameter);
    case SmoothingKind::kRunningMean:
      return windowPoints(parameter) > 1;
  }
  return false;
}

void Smoother::setSmoothing(const Smoothing& smoothing) {
  if (smoothing == smoothing_) return;
  smoothing_ = smoothing;
  reset();
}

void Smoother::reset() {
  values_.clear();
  values_.shrink_to_fit();  // a switch to kNone should give the memory back
  accumulated_ = 0;
  weight_sum_ = 1;
  last_x_ = 0;
  finite_ = 0;
  front_sum_.clear();
  front_count_.clear();
  front_begin_ = front_end_ = 0;
  back_sum_ = 0;
  back_count_ = 0;
}

std::span<const double> Smoother::update(CurveSpans data) {
  if (!smoothing_.active()) return data.y.first(data.size());
  if (data.size() < values_.size()) reset();  // the source was replaced
  switch (smoothing_.kind) {
    case SmoothingKind::kEma:
      extendEma(data);
      break;
    case SmoothingKind::kTimeEma:
      extendTimeEma(data);
      break;
    case SmoothingKind::kRunningMean:
      extendRunningMean(data);
      break;
    case SmoothingKind::kNone:
      break;
  }
  return values_;
}

void Smoother::extendEma(CurveSpans data) {
  // accumulated_ = s, weight_sum_ = w^k (starts at 1 = w^0).
  const double w = std::clamp(smoothing_.parameter, 0.0, kMaxEmaWeight);
  for (std::size_t i = values_.size(); i < data.size(); ++i) {
    const double v = data.y[i];
    if (!finite(v)) {
      values_.push_back(kNaN);
      continue;
    }
    accumulated_ = accumulated_ * w + (1 - w) * v;
    weight_sum_ *= w;
    ++finite_;
    values_.push_back(accumulated_ / (1 - weight_sum_));
  }
}

void Smoother::extendTimeEma(CurveSpans data) {
  // accumulated_ = sum w_i y_i and weight_sum_ = sum w_i, both relative to last_x_.
  const double half_life = smoothing_.parameter;
  for (std::size_t i = values_.size(); i < data.size(); ++i) {
    const double v = data.y[i];
    if (!finite(v)) {
      values_.push_back(kNaN);
      continue;
    }
    if (finite_ == 0) {
      accumulated_ = 0;
      weight_sum_ = 0;
    } else {
      const double decay = std::exp2(-(data.x[i] - last_x_) / half_life);
      accumulated_ *= decay;
      weight_sum_ *= decay;
    }
    accumulated_ += v;
    weight_sum_ += 1;
    last_x_ = data.x[i];
    ++finite_;
    values_.push_back(accumulated_ / weight_sum_);
  }
}

// NOTE [Window sums without subtraction]
// A running sum that adds what enters the window and subtracts what leaves
// it drifts, and one spike of 1e30 passing through wipes out every small
// value for good. Instead the window is split in two: a "front" of suffix
// sums computed from scratch over a stretch of points, and a "back" sum of
// the points pushed after that stretch. The window's sum is the front suffix
// at the window's start plus the back sum; nothing is ever subtracted. When
// the window's start passes the end of the front, the front is rebuilt over
// the current window: O(window) once every `window` points, O(1) amortised.
void Smoother::extendRunningMean(CurveSpans data) {
  const std::size_t window = windowPoints(smoothing_.parameter);
  for (std::size_t i = values_.size(); i < data.size(); ++i) {
    const std::size_t start = i + 1 > window ? i + 1 - window : 0;
    if (finite(data.y[i])) {
      back_sum_ += data.y[i];
      ++back_count_;
    }
    if (start >= front_end_) {  // the front is used up: rebuild it over [start, i]
      front_begin_ = start;
      front_end_ = i + 1;
      front_sum_.assign(front_end_ - front_begin_, 0);
      front_count_.assign(front_end_ - front_begin_, 0);
      double sum = 0;
      std::size_t count = 0;
      for (std::size_t k = front_end_; k-- > front_begin_;) {
        if (finite(data.y[k])) {
          sum += data.y[k];
          ++count;
        }
        front_sum_[k - front_begin_] = sum;
        front_count_[k - front_begin_] = count;
      }
      back_sum_ = 0;
      back_count_ = 0;
    }
    const double sum = front_sum_[start - front_begin_] + back_sum_;
    const std::size_t count = front_count_[start - front_begin_] + back_count_;
    values_.push_back(finite(data.y[i]) && count > 0 ? sum / double(count) : kNaN);
  }
}

}  // namespace fs::ui
