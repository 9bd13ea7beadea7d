#include "backend/tensorfile/tensor_stats.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

// NOTE [Tensor statistics]
// What each figure equals, for a tensor `t` of a supported dtype:
// - count, zeros (t == 0, so -0.0 counts), nans, posInfs, negInfs: exact.
// - min, max, mean, std, norm are over the FINITE elements only, where torch's
//   aminmax / mean / std / norm propagate NaN (and Inf). On finite data they
//   equal torch.aminmax(t), t.double().mean(), t.double().std() (unbiased,
//   correction = 1, torch's default; variance(0) is the population one) and
//   t.double().norm(); torch on fp32 rounds its fp32 result, so it agrees to
//   fp32 precision. Integers: min/max exact in int64 / uint64 (torch's
//   aminmax), moments from the values converted to double (exact up to 2^53;
//   torch refuses mean/std/norm on integers). bool counts as 0 / 1.
// - Accumulation: per block of kBlock elements a two-pass sum and sum of
//   squared deviations in double (16 lanes, so -O2 vectorises without
//   reassociation), merged with Chan et al.'s update. A block whose double sum
//   is not finite holds NaN/Inf (or overflows fp64) and is redone elementwise.
//   The norm is sqrt(m2 + n * mean^2): both terms >= 0, no cancellation.
// - Histogram: torch.histc(t, bins, lo, hi) bin for bin. The range [lo, hi]
//   (given, or the finite min / max: torch.histc's min = max = 0 default) is
//   widened to [lo - 1, hi + 1] when lo == hi. Like torch's linear-interpolation
//   kernel each element's bin is trunc((x - lo) * bins / (hi - lo)) computed
//   in the tensor's own arithmetic: float for fp32 (edges rounded to float),
//   double for fp64; bf16 and fp16 in float, integers and bool in double
//   (torch.histc of t.float() / t.double(): torch 1.13 refuses fp16 and
//   integers, and counts bf16 histograms in bf16, so a bin stops at 256).
//   x == hi goes to the last bin; x outside [lo, hi], NaN and +-Inf are not
//   counted (torch 1.13's histc counts NaN in bin 0). A subtree's histogram is
//   the sum of its tensors' histc over one range.
// - Passes: without a given range the histogram needs [min, max] first, so the
//   data is read twice (moments, then bins) and progress / the benchmark count
//   both passes; with a range both are computed per L1-resident block in one
//   read of the data.
// - fp64 data near DBL_MAX: a block sum that overflows is redone elementwise,
//   whose sum overflows too; mean and std are then Inf / NaN (torch's too).

namespace fs::tensorfile {
namespace {

constexpr std::size_t kBlock = 2048;  // elements per kernel call: the buffers stay in L1
constexpr int kLanes = 16;            // independent accumulators the vectoriser maps to registers
constexpr int kMaxBins = 1 << 24;     // bins stay exact in float

// ---------------------------------------------------------------- conversions

float bitsToFloat(std::uint32_t u) {
  return std::bit_cast<float>(u);
}

// ---------------------------------------------------------------- moments kernels

template <class T>
StatScalar scalarOf(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return StatScalar::ofFloat(static_cast<double>(v));
  } else if constexpr (std::is_signed_v<T>) {
    return StatScalar::ofInt(static_cast<std::int64_t>(v));
  } else {
    return StatScalar::ofUInt(static_cast<std::uint64_t>(v));
  }
}

template <class T>
void mergeBlock(Moments& m, std::size_t n, std::size_t finite, std::uint64_t zeros, T mn, T mx, double mean,
                double m2) {
  Moments b;
  b.count = n;
  b.finite = finite;
  b.zeros = zeros;
  if (finite > 0) {
    b.min = scalarOf(mn);
    b.max = scalarOf(mx);
    b.mean = mean;
    b.m2 = m2;
  }
  m.merge(b);
}

// Elementwise path for a block holding NaN / Inf (or whose fp64 sum overflowed).
template <class T>
void slowFloatBlock(const T* p, std::size_t n, Moments& m) {
  std::uint64_t zeros = 0, finite = 0;
  T mn = std::numeric_limits<T>::infinity(), mx = -mn;
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T x = p[i];
    if (x != x) {
      ++m.nans;
    } else if (x == std::numeric_limits<T>::infinity()) {
      ++m.posInfs;
    } else if (x == -std::numeric_limits<T>::infinity()) {
      ++m.negInfs;
    } else {
      ++finite;
      zeros += x == T(0);
      sum += static_cast<double>(x);
      mn = std::min(mn, x);
      mx = std::max(mx, x);
    }
  }
  const double mean = finite ? sum / static_cast<double>(finite) : 0.0;
  double m2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T x = p[i];
    if (x - x == T(0)) {  // finite
      const double d = static_cast<double>(x) - mean;
      m2 += d * d;
    }
  }
  mergeBlock(m, n, finite, zeros, mn, mx, mean, m2);
}

// One block (n <= kBlock) of a floating or integer type: min, max, zeros and a
// two-pass mean / m2 in double. No branch per element.
template <class T>
void momentsBlock(const T* p, std::size_t n, Moments& m) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  double sum[kLanes] = {};
  T mn[kLanes], mx[kLanes];
  std::uint32_t zero[kLanes] = {};
  for (int j = 0; j < kLanes; ++j) {
    mn[j] = kFloat ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    mx[j] = kFloat ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  }
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const T x = p[i + j];
      sum[j] += static_cast<double>(x);
      mn[j] = x < mn[j] ? x : mn[j];
      mx[j] = x > mx[j] ? x : mx[j];
      zero[j] += x == T(0) ? 1u : 0u;
    }
  }
  for (int j = 0; i < n; ++i, ++j) {
    const T x = p[i];
    sum[j] += static_cast<double>(x);
    mn[j] = x < mn[j] ? x : mn[j];
    mx[j] = x > mx[j] ? x : mx[j];
    zero[j] += x == T(0) ? 1u : 0u;
  }
  double s = 0;
  std::uint64_t zeros = 0;
  T lo = mn[0], hi = mx[0];
  for (int j = 0; j < kLanes; ++j) {
    s += sum[j];
    zeros += zero[j];
    lo = mn[j] < lo ? mn[j] : lo;
    hi = mx[j] > hi ? mx[j] : hi;
  }
  if constexpr (kFloat) {
    if (!std::isfinite(s)) return slowFloatBlock(p, n, m);
  }
  const double mean = s / static_cast<double>(n);
  double dev[kLanes] = {};
  i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const double d = static_cast<double>(p[i + j]) - mean;
      dev[j] += d * d;
    }
  }
  for (int j = 0; i < n; ++i, ++j) {
    const double d = static_cast<double>(p[i]) - mean;
    dev[j] += d * d;
  }
  double m2 = 0;
  for (int j = 0; j < kLanes; ++j) m2 += dev[j];
  mergeBlock(m, n, n, zeros, lo, hi, mean, m2);
}

// ---------------------------------------------------------------- histogram kernel

// The bin parameters in the arithmetic type T of the tensor (see the NOTE).
template <class T>
struct BinRule {
  T lo, hi, bins, range, lastBin;
  int count;
};

template <class T>
BinRule<T> makeRule(const Histogram& h) {
  const int bins = static_cast<int>(h.counts.size());
  BinRule<T> r{};
  r.count = bins;
  r.lo = static_cast<T>(h.lo);
  r.hi = static_cast<T>(h.hi);
  r.bins = static_cast<T>(bins);
  r.range = r.hi - r.lo;
  r.lastBin = static_cast<T>(bins - 1);
  return r;
}

// The bin of one element, or r.count for elements outside [lo, hi] and NaN.
template <class T>
inline std::int32_t binOf(T x, const BinRule<T>& r) {
  const bool in = (x >= r.lo) & (x <= r.hi);  // false for NaN
  T q = (x - r.lo) * r.bins / r.range;
  q = q > T(0) ? q : T(0);            // NaN -> 0: the cast below stays defined
  q = q < r.lastBin ? q : r.lastBin;  // x == hi -> the last bin
  const auto k = static_cast<std::int32_t>(q);
  return in ? k : r.count;
}

// Bin counts in four interleaved tables (`tables` x (count + 1) slots, the
// last slot of each for what is not counted), so runs of equal bins do not
// serialise on one counter.
constexpr std::size_t kTables = 4;

template <class T>
void histogramBlock(const T* p, std::size_t n, const BinRule<T>& r, std::uint64_t* counts) {
  alignas(64) std::int32_t index[kBlock];
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) index[i + j] = binOf<T>(p[i + j], r);
  for (; i < n; ++i) index[i] = binOf<T>(p[i], r);
  const std::size_t stride = static_cast<std::size_t>(r.count) + 1;
  std::uint64_t* c0 = counts;
  std::uint64_t* c1 = counts + stride;
  std::uint64_t* c2 = counts + 2 * stride;
  std::uint64_t* c3 = counts + 3 * stride;
  i = 0;
  for (; i + kTables <= n; i += kTables) {
    ++c0[index[i]];
    ++c1[index[i + 1]];
    ++c2[index[i + 2]];
    ++c3[index[i + 3]];
  }
  for (; i < n; ++i) ++c0[index[i]];
}

// ---------------------------------------------------------------- iteration

// The view's dimensions reordered for memory order (stride-0 dimensions
// outermost, then strides descending), size-1 dimensions dropped and
// contiguous neighbours merged. Element order does not matter to statistics.
struct Layout {
  std::vector<std::int64_t> shape, strides;
};

Layout normalize(const TensorView& v) {
  std::vector<std::size_t> dims;
  for (std::size_t d = 0; d < v.shape.size(); ++d)
    if (v.shape[d] != 1) dims.push_back(d);
  std::stable_sort(dims.begin(), dims.end(), [&](std::size_t a, std::size_t b) {
    const auto key = [&](std::size_t d) {
      return v.strides[d] == 0 ? std::numeric_limits<std::int64_t>::max() : v.strides[d];
    };
    return key(a) > key(b);
  });
  Layout l;
  for (std::size_t d : dims) {
    if (!l.shape.empty() && l.strides.back() == v.strides[d] * v.shape[d]) {
      l.shape.back() *= v.shape[d];
      l.strides.back() = v.strides[d];
    } else {
      l.shape.push_back(v.shape[d]);
      l.strides.push_back(v.strides[d]);
    }
  }
  if (l.shape.empty()) {
    l.shape = {1};
    l.strides = {1};
  }
  return l;
}

class Ticker {
 public:
  explicit Ticker(StatsControl& c) : c_(c) {}
  bool cancelled() const { return c_.cancel && c_.cancel->load(std::memory_order_relaxed); }
  // false: cancelled.
  bool advance(std::uint64_t bytes) {
    c_.done += bytes;
    c_.unreported += bytes;
    if (c_.unreported < c_.chunkBytes) return true;
    reportProgress(c_);
    return !cancelled();
  }

 private:
  StatsControl& c_;
};

Status cancelledStatus() {
  return Status::cancelled("tensor statistics cancelled");
}

// Calls fn(const std::byte* elements, std::size_t n) with n <= kBlock
// contiguous, aligned elements until every element of `v` was passed once;
// strided or short runs are gathered into a buffer.
template <class Fn>
Status forEachBlock(const TensorView& v, StatsControl& control, Fn&& fn) {
  const std::size_t item = itemSize(v.dtype);
  Ticker ticker(control);
  if (ticker.cancelled()) return cancelledStatus();
  auto extent = extentElements(v.shape, v.strides);
  if (!extent) return extent.status();
  if (*extent == 0) return Status::ok();
  if (*extent > v.bytes.size() / item) {
    return Status::invalidArgument("tensor view needs " + std::to_string(*extent * item) + " bytes but has " +
                                   std::to_string(v.bytes.size()));
  }
  const Layout l = normalize(v);
  const std::size_t rank = l.shape.size();
  const auto inner = static_cast<std::size_t>(l.shape.back());
  const auto innerStride = static_cast<std::size_t>(l.strides.back());
  alignas(64) std::byte buffer[kBlock * 8];
  std::size_t buffered = 0;
  auto emit = [&](const std::byte* p, std::size_t n) {
    fn(p, n);
    return ticker.advance(n * item);
  };
  std::vector<std::int64_t> index(rank - 1, 0);
  while (true) {
    std::size_t offset = 0;
    for (std::size_t d = 0; d + 1 < rank; ++d) offset += static_cast<std::size_t>(index[d] * l.strides[d]);
    const std::byte* base = v.bytes.data() + offset * item;
    const bool aligned = reinterpret_cast<std::uintptr_t>(base) % item == 0;
    if (innerStride == 1 && aligned && inner >= kBlock / 4) {
      for (std::size_t i = 0; i < inner; i += kBlock)
        if (!emit(base + i * item, std::min(kBlock, inner - i))) return cancelledStatus();
    } else {
      for (std::size_t i = 0; i < inner; ++i) {
        std::memcpy(buffer + buffered * item, base + i * innerStride * item, item);
        if (++buffered == kBlock) {
          if (!emit(buffer, buffered)) return cancelledStatus();
          buffered = 0;
        }
      }
    }
    std::size_t d = rank - 1;
    while (d > 0) {
      if (++index[d - 1] < l.shape[d - 1]) break;
      index[d - 1] = 0;
      --d;
    }
    if (d == 0) break;
  }
  if (buffered > 0 && !emit(buffer, buffered)) return cancelledStatus();
  return Status::ok();
}

template <class T>
const T* as(const std::byte* p) {
  return reinterpret_cast<const T*>(p);
}

// Moments and/or histogram of one view; either pointer may be null.
Status accumulate(const TensorView& v, Moments* moments, Histogram* histogram, StatsControl& control) {
  if (Status s = checkStatsDtype(v.dtype); !s) return s;
  std::vector<std::uint64_t> counts;
  if (histogram) counts.assign(kTables * (histogram->counts.size() + 1), 0);
  std::uint64_t* c = counts.data();
  alignas(64) float f[kBlock];
  alignas(64) double dbl[kBlock];
  alignas(64) std::uint8_t u8[kBlock];
  Status status;

  // Integers and bool: exact extremes in their type, bins in double.
  auto integers = [&]<class T>(T*) {
    const BinRule<double> rule = histogram ? makeRule<double>(*histogram) : BinRule<double>{};
    status = forEachBlock(v, control, [&](const std::byte* p, std::size_t n) {
      const T* x = as<T>(p);
      if constexpr (std::is_same_v<T, bool>) {
        for (std::size_t i = 0; i < n; ++i) u8[i] = x[i] ? 1 : 0;
        if (moments) momentsBlock(u8, n, *moments);
        if (histogram) {
          for (std::size_t i = 0; i < n; ++i) dbl[i] = u8[i];
          histogramBlock<double>(dbl, n, rule, c);
        }
      } else {
        if (moments) momentsBlock(x, n, *moments);
        if (histogram) {
          for (std::size_t i = 0; i < n; ++i) dbl[i] = static_cast<double>(x[i]);
          histogramBlock<double>(dbl, n, rule, c);
        }
      }
    });
  };
  // Floating types read directly.
  auto floats = [&]<class T>(T*) {
    const BinRule<T> rule = histogram ? makeRule<T>(*histogram) : BinRule<T>{};
    status = forEachBlock(v, control, [&](const std::byte* p, std::size_t n) {
      if (moments) momentsBlock(as<T>(p), n, *moments);
      if (histogram) histogramBlock<T>(as<T>(p), n, rule, c);
    });
  };
  // 16-bit floats: converted exactly to float per block.
  auto halfs = [&]<bool kBf16>() {
    const BinRule<float> rule = histogram ? makeRule<float>(*histogram) : BinRule<float>{};
    status = forEachBlock(v, control, [&](const std::byte* p, std::size_t n) {
      const auto* h = as<std::uint16_t>(p);
      for (std::size_t i = 0; i < n; ++i) f[i] = kBf16 ? bf16ToFloat(h[i]) : fp16ToFloat(h[i]);
      if (moments) momentsBlock(f, n, *moments);
      if (histogram) histogramBlock<float>(f, n, rule, c);
    });
  };

  switch (v.dtype) {
    case DType::kFloat32:
      floats(static_cast<float*>(nullptr));
      break;
    case DType::kFloat64:
      floats(static_cast<double*>(nullptr));
      break;
    case DType::kBFloat16:
      halfs.operator()<true>();
      break;
    case DType::kFloat16:
      halfs.operator()<false>();
      break;
    case DType::kInt64:
      integers(static_cast<std::int64_t*>(nullptr));
      break;
    case DType::kInt32:
      integers(static_cast<std::int32_t*>(nullptr));
      break;
    case DType::kInt16:
      integers(static_cast<std::int16_t*>(nullptr));
      break;
    case DType::kInt8:
      integers(static_cast<std::int8_t*>(nullptr));
      break;
    case DType::kUInt8:
      integers(static_cast<std::uint8_t*>(nullptr));
      break;
    case DType::kUInt16:
      integers(static_cast<std::uint16_t*>(nullptr));
      break;
    case DType::kUInt32:
      integers(static_cast<std::uint32_t*>(nullptr));
      break;
    case DType::kUInt64:
      integers(static_cast<std::uint64_t*>(nullptr));
      break;
    case DType::kBool:
      integers(static_cast<bool*>(nullptr));
      break;
    default:
      return checkStatsDtype(v.dtype);
  }
  if (histogram && status) {
    const std::size_t stride = histogram->counts.size() + 1;
    for (std::size_t t = 0; t < kTables; ++t)
      for (std::size_t b = 0; b < histogram->counts.size(); ++b)
        histogram->counts[b] += counts[t * stride + b];
  }
  return status;
}

}  // namespace

// ---------------------------------------------------------------- public

float bf16ToFloat(std::uint16_t bits) {
  return bitsToFloat(static_cast<std::uint32_t>(bits) << 16);
}

// IEEE binary16 -> binary32 without branches on the value (the method of
// Maratea's FP16 library, which c10::Half uses): normals are rebiased by a
// multiply, subnormals come out of a magic-number subtraction.
float fp16ToFloat(std::uint16_t bits) {
  const std::uint32_t w = static_cast<std::uint32_t>(bits) << 16;
  const std::uint32_t sign = w & 0x80000000u;
  const std::uint32_t twoW = w + w;
  const float normalized = bitsToFloat((twoW >> 4) + (0xE0u << 23)) * bitsToFloat(0x7800000u);  // 2^-112
  const float denormalized = bitsToFloat((twoW >> 17) | (126u << 23)) - 0.5f;
  const std::uint32_t magnitude = twoW < (1u << 27) ? std::bit_cast<std::uint32_t>(denormalized)
                                                    : std::bit_cast<std::uint32_t>(normalized);
  return bitsToFloat(sign | magnitude);
}

double StatScalar::toDouble() const {
  switch (kind) {
    case Kind::kFloat:
      return f;
    case Kind::kInt:
      return static_cast<double>(i);
    case Kind::kUInt:
      return static_cast<double>(u);
  }
  return f;
}

std::string StatScalar::toString() const {
  char buf[64];
  std::to_chars_result r{};
  switch (kind) {
    case Kind::kFloat:
      r = std::to_chars(buf, buf + sizeof(buf), f);
      break;
    case Kind::kInt:
      r = std::to_chars(buf, buf + sizeof(buf), i);
      break;
    case Kind::kUInt:
      r = std::to_chars(buf, buf + sizeof(buf), u);
      break;
  }
  return std::string(buf, r.ptr);
}

bool operator<(const StatScalar& a, const StatScalar& b) {
  using K = StatScalar::Kind;
  if (a.kind == b.kind) {
    if (a.kind == K::kFloat) return a.f < b.f;
    if (a.kind == K::kInt) return a.i < b.i;
    return a.u < b.u;
  }
  if (a.kind == K::kInt && b.kind == K::kUInt) return a.i < 0 || static_cast<std::uint64_t>(a.i) < b.u;
  if (a.kind == K::kUInt && b.kind == K::kInt) return b.i >= 0 && a.u < static_cast<std::uint64_t>(b.i);
  // Integer against double: long double holds both exactly (x86 80-bit, aarch64 128-bit).
  auto wide = [](const StatScalar& s) {
    return s.kind == K::kFloat ? static_cast<long double>(s.f)
           : s.kind == K::kInt ? static_cast<long double>(s.i)
                               : static_cast<long double>(s.u);
  };
  return wide(a) < wide(b);
}

void Moments::merge(const Moments& o) {
  count += o.count;
  zeros += o.zeros;
  nans += o.nans;
  posInfs += o.posInfs;
  negInfs += o.negInfs;
  if (o.finite == 0) return;
  if (finite == 0) {
    finite = o.finite;
    min = o.min;
    max = o.max;
    mean = o.mean;
    m2 = o.m2;
    return;
  }
  const double na = static_cast<double>(finite), nb = static_cast<double>(o.finite), n = na + nb;
  const double delta = o.mean - mean;
  mean += delta * (nb / n);
  m2 += o.m2 + delta * delta * (na * nb / n);
  finite += o.finite;
  if (*o.min < *min) min = o.min;
  if (*max < *o.max) max = o.max;
}

double Moments::meanOrNaN() const {
  return finite ? mean : std::numeric_limits<double>::quiet_NaN();
}

double Moments::variance(int correction) const {
  const double dof = static_cast<double>(finite) - correction;
  return dof > 0 ? m2 / dof : std::numeric_limits<double>::quiet_NaN();
}

double Moments::stddev(int correction) const {
  return std::sqrt(variance(correction));
}

double Moments::l2Norm() const {
  return finite ? std::sqrt(m2 + static_cast<double>(finite) * mean * mean) : 0.0;
}

Histogram Histogram::make(int bins, double lo, double hi) {
  Histogram h;
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  h.lo = lo;
  h.hi = hi;
  h.counts.assign(static_cast<std::size_t>(std::max(bins, 0)), 0);
  return h;
}

void Histogram::merge(const Histogram& other) {
  for (std::size_t b = 0; b < counts.size() && b < other.counts.size(); ++b) counts[b] += other.counts[b];
}

// torch.linspace's edges: from lo for the first half, from hi for the second.
double Histogram::binLow(std::size_t bin) const {
  const auto n = static_cast<double>(counts.size());
  const double step = (hi - lo) / n;
  const auto i = static_cast<double>(bin);
  return bin < (counts.size() + 1) / 2 ? lo + step * i : hi - step * (n - i);
}

double Histogram::binHigh(std::size_t bin) const {
  return binLow(bin + 1);
}

std::uint64_t Histogram::total() const {
  return std::accumulate(counts.begin(), counts.end(), std::uint64_t{0});
}

std::uint64_t Histogram::maxCount() const {
  return counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
}

std::vector<double> Histogram::heights(bool logScale) const {
  std::vector<double> out(counts.size(), 0.0);
  const std::uint64_t top = maxCount();
  if (top == 0) return out;
  for (std::size_t b = 0; b < counts.size(); ++b) {
    const auto c = static_cast<double>(counts[b]);
    out[b] = logScale ? std::log1p(c) / std::log1p(static_cast<double>(top)) : c / static_cast<double>(top);
  }
  return out;
}

Status checkStatsDtype(DType dtype) {
  switch (dtype) {
    case DType::kComplex64:
    case DType::kComplex128:
    case DType::kFloat8E4M3:
    case DType::kFloat8E5M2:
      return Status::unsupported("tensor statistics do not support " + std::string(torchName(dtype)));
    default:
      return Status::ok();
  }
}

Status checkHistogramRange(int bins, double lo, double hi) {
  if (bins < 1 || bins > kMaxBins)
    return Status::invalidArgument("histogram bins must be 1.." + std::to_string(kMaxBins) + ", got " +
                                   std::to_string(bins));
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
    return Status::invalidArgument("histogram range [" + StatScalar::ofFloat(lo).toString() + ", " +
                                   StatScalar::ofFloat(hi).toString() + "] is not finite and ordered");
  return Status::ok();
}

void reportProgress(StatsControl& control) {
  if (control.unreported == 0) return;
  control.unreported = 0;
  if (control.progress) control.progress(control.done, control.total);
}

Status accumulateMoments(const TensorView& view, Moments& moments, StatsControl& control) {
  return accumulate(view, &moments, nullptr, control);
}

Status accumulateHistogram(const TensorView& view, Histogram& histogram, StatsControl& control) {
  return accumulate(view, nullptr, &histogram, control);
}

StatusOr<TensorStats> computeStats(std::span<const TensorView> views, const StatsOptions& options) {
  for (const TensorView& v : views)
    if (Status s = checkStatsDtype(v.dtype); !s) return s;
  if (options.bins < 0) return Status::invalidArgument("histogram bins must be >= 0");
  if (options.bins > 0) {
    const auto [lo, hi] = options.range.value_or(std::pair{0.0, 0.0});
    if (Status s = checkHistogramRange(options.bins, lo, hi); !s) return s;
  }
  const bool twoPasses = options.bins > 0 && !options.range;
  StatsControl control;
  control.cancel = options.cancel;
  control.progress = options.progress;
  control.chunkBytes = std::max<std::uint64_t>(options.chunkBytes, 1);
  for (const TensorView& v : views)
    control.total += static_cast<std::uint64_t>(std::max<std::int64_t>(v.numel(), 0)) * itemSize(v.dtype);
  if (twoPasses) control.total *= 2;

  TensorStats out;
  if (options.bins > 0 && options.range)
    out.histogram = Histogram::make(options.bins, options.range->first, options.range->second);
  for (const TensorView& v : views) {
    Histogram* h = out.histogram ? &*out.histogram : nullptr;
    if (Status s = accumulate(v, &out.moments, h, control); !s) return s;
  }
  if (twoPasses) {
    const Moments& m = out.moments;
    out.histogram = m.finite ? Histogram::make(options.bins, m.min->toDouble(), m.max->toDouble())
                             : Histogram::make(options.bins, 0, 0);
    for (const TensorView& v : views)
      if (Status s = accumulate(v, nullptr, &*out.histogram, control); !s) return s;
  }
  reportProgress(control);
  return out;
}

StatusOr<TensorStats> computeStats(const TensorView& view, const StatsOptions& options) {
  return computeStats(std::span<const TensorView>(&view, 1), options);
}

}  // namespace fs::tensorfile
