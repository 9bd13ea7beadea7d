// Statistics of tensors without LibTorch: min, max, mean, std, L2 norm, counts
// of zeros / NaN / Inf, and a histogram, over one TensorView or many (a
// checkpoint subtree), in chunks with progress and cancel.
//
// Values are plain structs; Moments and Histogram merge, so callers may split
// tensors over threads and merge the partial results. computeStats runs on the
// caller's thread (meant for a worker); the cancel flag and the progress
// callback are the only things it shares with other threads.
// Semantics (which torch call each figure equals): NOTE [Tensor statistics].
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/tensorfile/tensor_view.h"

namespace fs::tensorfile {

// A minimum or maximum: exact for every integer type (int64 / uint64), a double
// for the floating types (exact for fp64/32/16 and bf16 values).
struct StatScalar {
  enum class Kind { kFloat, kInt, kUInt };
  Kind kind = Kind::kFloat;
  double f = 0;
  std::int64_t i = 0;
  std::uint64_t u = 0;

  static StatScalar ofFloat(double v) { return {Kind::kFloat, v, 0, 0}; }
  static StatScalar ofInt(std::int64_t v) { return {Kind::kInt, 0, v, 0}; }
  static StatScalar ofUInt(std::uint64_t v) { return {Kind::kUInt, 0, 0, v}; }
  double toDouble() const;
  std::string toString() const;  // "-3", "18446744073709551615", "0.5" (shortest round trip)
  // Exact order across kinds (integers beyond 2^53 against doubles included).
  friend bool operator<(const StatScalar& a, const StatScalar& b);
};

// Count, extremes and moments of the elements seen. NaN and +-Inf are counted
// apart and left out of everything else (torch propagates them).
struct Moments {
  std::uint64_t count = 0;   // every element seen
  std::uint64_t finite = 0;  // elements in min/max/mean/m2: all but NaN and +-Inf
  std::uint64_t zeros = 0;   // == 0 (-0.0 included; false for bool)
  std::uint64_t nans = 0;
  std::uint64_t posInfs = 0;
  std::uint64_t negInfs = 0;
  std::optional<StatScalar> min;  // over finite values; empty when finite == 0
  std::optional<StatScalar> max;
  double mean = 0;  // over finite values (0 while finite == 0)
  double m2 = 0;    // sum of squared deviations from mean

  // Chan et al.'s pairwise update: exact for counts and extremes, stable for mean and m2.
  void merge(const Moments& other);
  double meanOrNaN() const;  // NaN when finite == 0, as torch.mean of an empty tensor
  // m2 / (finite - correction); NaN when finite <= correction. correction 1 is
  // torch.var's default (unbiased), 0 the population variance.
  double variance(int correction = 1) const;
  double stddev(int correction = 1) const;
  double l2Norm() const;  // sqrt(sum of squares) = sqrt(m2 + finite * mean^2)
};

// counts.size() equal-width bins over [lo, hi]: bin i is [lo + i*w, lo + (i+1)*w),
// the last bin also holds hi; values outside, NaN and +-Inf are not counted.
struct Histogram {
  double lo = 0;
  double hi = 0;
  std::vector<std::uint64_t> counts;

  // torch.histc's range rule: lo == hi widens to [lo - 1, hi + 1].
  // REQUIRES bins >= 1, lo <= hi, both finite (see checkHistogramRange).
  static Histogram make(int bins, double lo, double hi);
  bool sameBins(const Histogram& other) const {
    return lo == other.lo && hi == other.hi && counts.size() == other.counts.size();
  }
  void merge(const Histogram& other);  // REQUIRES sameBins(other)
  double binLow(std::size_t bin) const;
  double binHigh(std::size_t bin) const;
  std::uint64_t total() const;
  std::uint64_t maxCount() const;
  // Bar heights in [0, 1] for a view: count / maxCount, or with `logScale`
  // log1p(count) / log1p(maxCount) (an empty bin stays 0, a single count shows).
  std::vector<double> heights(bool logScale) const;
};

// Progress and cancel of one computation (one per thread). Progress counts the
// bytes of elements processed (numel * itemsize per pass over a tensor) and is
// reported every chunkBytes (not per tensor: a subtree of many small tensors
// makes few calls); reportProgress reports the rest (computeStats does at its end).
struct StatsControl {
  const std::atomic<bool>* cancel = nullptr;  // checked every chunk; set -> Status cancelled
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;  // from the computing thread
  std::uint64_t chunkBytes = std::uint64_t{16} << 20;                     // progress / cancel granularity
  std::uint64_t total = 0;                                                // what `progress` reports as total
  std::uint64_t done = 0;        // advanced by the accumulate functions
  std::uint64_t unreported = 0;  // bytes done since the last report
};

// Calls control.progress(done, total) if bytes were done since the last call.
void reportProgress(StatsControl& control);

struct StatsOptions {
  int bins = 0;                                    // histogram bins, 0: no histogram (max 1 << 24)
  std::optional<std::pair<double, double>> range;  // histogram range; default [min, max] of finite values
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
  std::uint64_t chunkBytes = std::uint64_t{16} << 20;
};

struct TensorStats {
  Moments moments;
  std::optional<Histogram> histogram;  // when bins > 0
};

// OK for the dtypes the statistics support: Unsupported naming the dtype for
// complex and float8.
Status checkStatsDtype(DType dtype);
// InvalidArgument unless 1 <= bins <= 1 << 24 and lo <= hi are finite.
Status checkHistogramRange(int bins, double lo, double hi);

// Statistics over every element of every view (a subtree's tensors together).
// Without a range and with bins > 0 this reads the data twice (moments, then
// the histogram over [min, max]); with a range, once. Progress total is the
// bytes of all passes. Views must cover their extent (bytes are checked, never
// read beyond). Errors: Unsupported dtype, InvalidArgument, Cancelled.
StatusOr<TensorStats> computeStats(std::span<const TensorView> views, const StatsOptions& options);
StatusOr<TensorStats> computeStats(const TensorView& view, const StatsOptions& options);

// The two passes, for callers that split work over threads: add one view's
// elements to `moments` / `histogram` (made with Histogram::make).
Status accumulateMoments(const TensorView& view, Moments& moments, StatsControl& control);
Status accumulateHistogram(const TensorView& view, Histogram& histogram, StatsControl& control);

// Exact conversions to float: every bf16 / IEEE binary16 bit pattern (subnormals,
// +-Inf, NaN kept NaN).
float bf16ToFloat(std::uint16_t bits);
float fp16ToFloat(std::uint16_t bits);

}  // namespace fs::tensorfile
