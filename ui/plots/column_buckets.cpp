#include "ui/plots/column_buckets.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fs::ui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void emitPoint(ColumnBuckets* out, double x, double line, double low, double high, double left,
               double right) {
  out->x.push_back(x);
  out->line.push_back(line);
  out->low.push_back(low);
  out->high.push_back(high);
  out->left.push_back(left);
  out->right.push_back(right);
}

void emitGap(ColumnBuckets* out, double x) {
  if (!out->line.empty() && std::isnan(out->line.back())) return;  // one break is enough
  emitPoint(out, x, kNaN, kNaN, kNaN, x, x);
}

// The first index in [begin, end) with x >= value, searched outwards from
// begin: a column's end is near its start, so the probes stay in cache
// where a binary search over all of x would miss on nearly every one.
std::size_t gallop(std::span<const double> x, std::size_t begin, std::size_t end, double value) {
  std::size_t lo = begin, hi = begin, step = 1;
  while (hi < end && x[hi] < value) {
    lo = hi + 1;
    hi = begin + step;
    step *= 2;
  }
  hi = std::min(hi, end);
  return std::size_t(std::lower_bound(x.begin() + lo, x.begin() + hi, value) - x.begin());
}

}  // namespace

void ColumnBuckets::clear() {
  x.clear();
  line.clear();
  low.clear();
  high.clear();
  left.clear();
  right.clear();
}

void bucketColumns(const BucketSource& source, std::span<const double> edges, const BucketOptions& options,
                   ColumnBuckets* out) {
  out->clear();
  const std::size_t n = std::min({source.x.size(), source.line.size(), source.band.size(),
                                  source.line_pyramid->size(), source.band_pyramid->size()});
  if (n == 0 || edges.size() < 2) return;
  const auto x = source.x.first(n);
  const auto line = source.line.first(n);
  const auto band = source.band.first(n);
  const MinMaxPyramid& lines = *source.line_pyramid;
  const MinMaxPyramid& bands = *source.band_pyramid;
  const bool pos = options.positive_y;
  constexpr auto npos = MinMaxPyramid::npos;
  // A single point outside the columns: its band is itself, if drawable.
  auto neighbour = [&](std::size_t k) {
    const double b = isDrawable(band[k], pos) ? band[k] : kNaN;
    emitPoint(out, x[k], line[k], b, b, x[k], x[k]);
  };

  // Points at x <= 0 do not exist on a log x axis.
  const std::size_t x_begin =
      options.positive_x ? std::size_t(std::upper_bound(x.begin(), x.end(), 0.0) - x.begin()) : 0;
  std::size_t begin = std::size_t(std::lower_bound(x.begin() + x_begin, x.end(), edges.front()) - x.begin());
  const std::size_t columns_end =
      std::size_t(std::upper_bound(x.begin() + begin, x.end(), edges.back()) - x.begin());

  if (options.neighbours && begin > x_begin) {
    const std::size_t k = lines.lastDrawable(line, x_begin, begin, pos);
    if (k != npos) neighbour(k);
    if (k == npos || k + 1 < begin) emitGap(out, x[begin - 1]);
  }

  const std::size_t columns = edges.size() - 1;
  for (std::size_t c = 0; c < columns && begin < columns_end; ++c) {
    const std::size_t end = c + 1 == columns ? columns_end : gallop(x, begin, columns_end, edges[c + 1]);
    if (end == begin) continue;
    const std::size_t last = lines.lastDrawable(line, begin, end, pos);
    if (last == npos) {
      emitGap(out, x[end - 1]);
    } else {
      const YRange r = bands.range(band, begin, end);
      const bool empty = pos ? !r.hasPositive() : r.empty();
      emitPoint(out, x[last], line[last],
                empty ? kNaN
                : pos ? r.min_positive
                      : r.min,
                empty ? kNaN : r.max, edges[c], edges[c + 1]);
    }
    begin = end;
  }

  if (options.neighbours && columns_end < n) {
    const std::size_t k = lines.firstDrawable(line, columns_end, n, pos);
    if (k == npos || k > columns_end) emitGap(out, x[columns_end]);
    if (k != npos) neighbour(k);
  }
}

void bucketColumns(CurveSpans data, const MinMaxPyramid& pyramid, std::span<const double> edges,
                   const BucketOptions& options, ColumnBuckets* out) {
  bucketColumns(BucketSource{data.x, data.y, &pyramid, data.y, &pyramid}, edges, options, out);
}

std::vector<double> columnEdges(double lo, double hi, int columns, bool logarithmic) {
  std::vector<double> edges(std::size_t(std::max(columns, 1)) + 1);
  const std::size_t last = edges.size() - 1;
  for (std::size_t c = 0; c <= last; ++c) {
    const double f = double(c) / double(last);
    edges[c] = logarithmic ? lo * std::pow(hi / lo, f) : lo + (hi - lo) * f;
  }
  edges[0] = lo;  // exact ends: no point at the range's edge falls outside by rounding
  edges[last] = hi;
  return edges;
}

}  // namespace fs::ui
