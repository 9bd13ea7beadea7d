// Level of detail: the pyramid and the column buckets against brute force on
// random data (with NaN gaps and non-positive values), one spike among 1M
// points surviving as its column's max, and a pyramid grown by appends of
// every size equal to one built at once.
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ui/plots/column_buckets.h"
#include "ui/plots/minmax_pyramid.h"
#include "ui/plots/view_clip.h"

namespace fs::ui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr auto npos = MinMaxPyramid::npos;

// A random walk with duplicate x values, NaN runs and values around 0.
struct Data {
  std::vector<double> x, y;
};

Data randomData(std::size_t n, std::mt19937_64& rng) {
  Data d;
  std::uniform_real_distribution<double> u(0, 1);
  double x = 0, y = 0;
  for (std::size_t i = 0; i < n; ++i) {
    x += u(rng) < 0.1 ? 0 : u(rng) * 3;  // repeated x values too
    y += u(rng) - 0.5;
    d.x.push_back(x);
    d.y.push_back(u(rng) < 0.02 ? kNaN : y);
  }
  // A long NaN run: whole blocks and whole columns without a drawable value.
  for (std::size_t i = n / 3; i < n / 3 + std::min<std::size_t>(n / 10, 5000); ++i) d.y[i] = kNaN;
  return d;
}

// The polyline's value at x (x strictly increasing); NaN in a gap.
double valueAt(const std::vector<double>& px, const std::vector<double>& py, double x) {
  const auto it = std::upper_bound(px.begin(), px.end(), x);
  if (it == px.begin() || it == px.end()) return kNaN;
  const std::size_t i = std::size_t(it - px.begin());
  const double t = (x - px[i - 1]) / (px[i] - px[i - 1]);
  return py[i - 1] + t * (py[i] - py[i - 1]);
}

bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

std::size_t bruteLast(const std::vector<double>& y, std::size_t b, std::size_t e, bool pos) {
  for (std::size_t i = e; i-- > b;)
    if (isDrawable(y[i], pos)) return i;
  return npos;
}
std::size_t bruteFirst(const std::vector<double>& y, std::size_t b, std::size_t e, bool pos) {
  for (std::size_t i = b; i < e; ++i)
    if (isDrawable(y[i], pos)) return i;
  return npos;
}

// The definition in column_buckets.h, written the slow, obvious way.
ColumnBuckets bruteBuckets(const Data& d, const std::vector<double>& edges, bool pos) {
  ColumnBuckets out;
  auto point = [&](double x, double l, double lo, double hi, double left, double right) {
    out.x.push_back(x);
    out.line.push_back(l);
    out.low.push_back(lo);
    out.high.push_back(hi);
    out.left.push_back(left);
    out.right.push_back(right);
  };
  auto gap = [&](double x) {
    if (!out.line.empty() && std::isnan(out.line.back())) return;
    point(x, kNaN, kNaN, kNaN, x, x);
  };
  const std::size_t n = d.x.size();
  std::size_t first_in = n, end_in = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (d.x[i] >= edges.front() && d.x[i] <= edges.back()) {
      first_in = std::min(first_in, i);
      end_in = i + 1;
    }
  if (first_in == n)
    first_in = end_in = std::size_t(std::lower_bound(d.x.begin(), d.x.end(), edges.front()) - d.x.begin());
  if (first_in > 0) {
    const std::size_t k = bruteLast(d.y, 0, first_in, pos);
    if (k != npos) point(d.x[k], d.y[k], d.y[k], d.y[k], d.x[k], d.x[k]);
    if (k == npos || k + 1 < first_in) gap(d.x[first_in - 1]);
  }
  const std::size_t columns = edges.size() - 1;
  for (std::size_t c = 0; c < columns; ++c) {
    std::vector<std::size_t> in;
    for (std::size_t i = first_in; i < end_in; ++i) {
      const bool inside =
          d.x[i] >= edges[c] && (c + 1 == columns ? d.x[i] <= edges[c + 1] : d.x[i] < edges[c + 1]);
      if (inside) in.push_back(i);
    }
    if (in.empty()) continue;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    std::size_t last = npos;
    for (std::size_t i : in)
      if (isDrawable(d.y[i], pos)) {
        lo = std::min(lo, d.y[i]);
        hi = std::max(hi, d.y[i]);
        last = i;
      }
    if (last == npos)
      gap(d.x[in.back()]);
    else
      point(d.x[last], d.y[last], lo, hi, edges[c], edges[c + 1]);
  }
  if (end_in < n) {
    const std::size_t k = bruteFirst(d.y, end_in, n, pos);
    if (k == npos || k > end_in) gap(d.x[end_in]);
    if (k != npos) point(d.x[k], d.y[k], d.y[k], d.y[k], d.x[k], d.x[k]);
  }
  return out;
}

void compare(const ColumnBuckets& got, const ColumnBuckets& want) {
  QCOMPARE(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!same(got.x[i], want.x[i]) || !same(got.line[i], want.line[i]) || !same(got.low[i], want.low[i]) ||
        !same(got.high[i], want.high[i]) || got.left[i] != want.left[i] || got.right[i] != want.right[i])
      QFAIL(qPrintable(QStringLiteral("bucket %1: got (%2, %3, %4, %5), want (%6, %7, %8, %9)")
                           .arg(i)
                           .arg(got.x[i])
                           .arg(got.line[i])
                           .arg(got.low[i])
                           .arg(got.high[i])
                           .arg(want.x[i])
                           .arg(want.line[i])
                           .arg(want.low[i])
                           .arg(want.high[i])));
  }
}

}  // namespace

class LevelOfDetailTest : public QObject {
  Q_OBJECT
 private slots:
  void rangeQueriesMatchBruteForce() {
    std::mt19937_64 rng(7);
    const Data d = randomData(20000, rng);
    MinMaxPyramid p;
    p.update(d.y);
    std::uniform_int_distribution<std::size_t> pick(0, d.y.size());
    for (int t = 0; t < 3000; ++t) {
      std::size_t b = pick(rng), e = pick(rng);
      if (b > e) std::swap(b, e);
      if (t % 5 == 0) e = std::min(d.y.size(), b + t % 200);  // short ranges inside one block
      YRange want;
      for (std::size_t i = b; i < e; ++i) want.add(d.y[i]);
      QCOMPARE(p.range(d.y, b, e), want);
      for (bool pos : {false, true}) {
        QCOMPARE(p.lastDrawable(d.y, b, e, pos), bruteLast(d.y, b, e, pos));
        QCOMPARE(p.firstDrawable(d.y, b, e, pos), bruteFirst(d.y, b, e, pos));
      }
    }
  }

  void bucketsMatchBruteForce() {
    std::mt19937_64 rng(11);
    const Data d = randomData(50000, rng);
    MinMaxPyramid p;
    p.update(d.y);
    const double x0 = d.x.front(), x1 = d.x.back();
    std::uniform_real_distribution<double> u(0, 1);
    for (int t = 0; t < 60; ++t) {
      double lo = x0 + (x1 - x0) * u(rng) * 1.1 - (x1 - x0) * 0.05;
      double hi = x0 + (x1 - x0) * u(rng) * 1.1 - (x1 - x0) * 0.05;
      if (lo > hi) std::swap(lo, hi);
      if (t == 0) lo = x0, hi = x1;              // the full range
      if (t == 1) lo = d.x[100], hi = d.x[100];  // a zero-width range on a point
      if (t == 2) hi = lo + 40;                  // zoomed in: fewer points than columns
      const int columns = t % 3 == 0 ? 1600 : 1 + int(u(rng) * 900);
      const bool log_x = t % 4 == 3 && lo > 0;
      const auto edges = columnEdges(lo, hi, columns, log_x);
      for (bool pos : {false, true}) {
        ColumnBuckets got;
        bucketColumns({d.x, d.y}, p, edges, BucketOptions{.positive_y = pos}, &got);
        compare(got, bruteBuckets(d, edges, pos));
        if (QTest::currentTestFailed()) return;
      }
    }
  }

  void spikeAmongAMillionPointsIsItsColumnsMax() {
    const std::size_t n = 1'000'000;
    std::mt19937_64 rng(3);
    std::normal_distribution<double> step(0, 1);
    std::vector<double> x(n), y(n);
    double v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = double(i + 1);
      v += step(rng);
      y[i] = v;
    }
    const std::size_t spike_at = 612'345;
    const double spike = *std::max_element(y.begin(), y.end()) + 1000;
    y[spike_at] = spike;
    MinMaxPyramid p;
    p.update(y);
    const auto edges = columnEdges(x.front(), x.back(), 1600, false);
    ColumnBuckets b;
    bucketColumns({x, y}, p, edges, {}, &b);
    QVERIFY(b.size() <= 1600);
    const std::size_t column =
        std::size_t(std::upper_bound(edges.begin(), edges.end(), x[spike_at]) - edges.begin()) - 1;
    // The bucket of that column is the one whose x (its last point) is in it.
    std::size_t found = npos;
    for (std::size_t i = 0; i < b.size(); ++i)
      if (b.x[i] >= edges[column] && b.x[i] < edges[column + 1]) found = i;
    QVERIFY(found != npos);
    QCOMPARE(b.high[found], spike);
    QCOMPARE(*std::max_element(b.high.begin(), b.high.end()), spike);
    // A single-point spike is never the line unless it is its column's last point.
    QVERIFY(b.line[found] != spike);
  }

  void appendsEqualOneBuild() {
    std::mt19937_64 rng(5);
    const Data d = randomData(70000, rng);
    MinMaxPyramid grown;
    std::size_t n = 0;
    const std::size_t chunks[] = {1, 1, 3, 63, 64, 65, 1, 1000, 127, 4096, 7};
    for (int k = 0; n < d.y.size(); ++k) {
      n = std::min(d.y.size(), n + chunks[k % std::size(chunks)] * (k % 13 == 12 ? 50 : 1));
      grown.update(std::span<const double>(d.y).first(n));
      if (k % 97 == 0 || n == d.y.size()) {
        MinMaxPyramid built;
        built.update(std::span<const double>(d.y).first(n));
        QCOMPARE(grown.size(), built.size());
        QCOMPARE(grown.levels(), built.levels());
      }
    }
    // Levels hold complete blocks only: level L has floor(n / (64 << L)) blocks.
    for (std::size_t level = 0; level < grown.levels().size(); ++level)
      QCOMPARE(grown.levels()[level].size(), d.y.size() / (MinMaxPyramid::kLeafPoints << level));
  }

  void nanRunsAreGapsAndShortNansAreNot() {
    // 10 points, one per column: the NaN at index 4 breaks the line.
    std::vector<double> x, y;
    for (int i = 0; i < 10; ++i) {
      x.push_back(i);
      y.push_back(i == 4 ? kNaN : i * 10.0);
    }
    MinMaxPyramid p;
    p.update(y);
    ColumnBuckets b;
    bucketColumns({x, y}, p, columnEdges(-0.5, 9.5, 10, false), {}, &b);
    QCOMPARE(b.size(), std::size_t(10));
    QVERIFY(std::isnan(b.line[4]));
    QCOMPARE(b.x[4], 4.0);
    QCOMPARE(b.line[5], 50.0);

    // One column over all ten: the NaN hides inside it, the band ignores it.
    bucketColumns({x, y}, p, columnEdges(-0.5, 9.5, 1, false), {}, &b);
    QCOMPARE(b.size(), std::size_t(1));
    QCOMPARE(b.line[0], 90.0);
    QCOMPARE(b.low[0], 0.0);
    QCOMPARE(b.high[0], 90.0);

    // The last point is NaN: the line takes the last finite one.
    y[9] = kNaN;
    MinMaxPyramid q;
    q.update(y);
    bucketColumns({x, y}, q, columnEdges(-0.5, 9.5, 1, false), {}, &b);
    QCOMPARE(b.line[0], 80.0);
    QCOMPARE(b.x[0], 8.0);
  }

  void logAxisSkipsNonPositiveValues() {
    std::vector<double> x{1, 2, 3, 4, 5, 6}, y{-1, 0.5, 0, 2, -3, 0};
    MinMaxPyramid p;
    p.update(y);
    ColumnBuckets b;
    bucketColumns({x, y}, p, columnEdges(1, 6, 1, true),
                  BucketOptions{.positive_y = true, .positive_x = true}, &b);
    QCOMPARE(b.size(), std::size_t(1));
    QCOMPARE(b.line[0], 2.0);  // the last positive value
    QCOMPARE(b.low[0], 0.5);   // the smallest positive value
    QCOMPARE(b.high[0], 2.0);
  }

  void clampingKeepsWhatTheViewShows() {
    std::mt19937_64 rng(9);
    std::uniform_real_distribution<double> u(0, 1);
    for (int t = 0; t < 200; ++t) {
      std::vector<double> x, y;
      double px = 0;
      for (int i = 0; i < 50; ++i) {
        px += 0.01 + u(rng) * (i % 10 == 0 ? 1000 : 1);
        x.push_back(px);
        y.push_back(u(rng) < 0.05 ? kNaN : (u(rng) < 0.2 ? 1e7 : 1) * (u(rng) - 0.5));
      }
      const double x_lo = x[10] + u(rng), x_hi = x_lo + 1 + u(rng) * 5;
      const double y_lo = -0.3 * u(rng), y_hi = 0.3 * u(rng) + 0.01;
      Polyline out;
      clampToView(x, y, ViewBox{x_lo, x_hi, y_lo, y_hi}, &out);
      const double w = x_hi - x_lo, h = y_hi - y_lo;
      for (std::size_t i = 0; i < out.x.size(); ++i) {
        QVERIFY(out.x[i] >= x_lo - w - 1e-9 && out.x[i] <= x_hi + w + 1e-9);
        if (!std::isnan(out.y[i])) QVERIFY(out.y[i] >= y_lo - h - 1e-9 && out.y[i] <= y_hi + h + 1e-9);
      }
      // Inside the view the clamped line shows the same as the original.
      for (int k = 0; k <= 200; ++k) {
        const double sx = x_lo + w * k / 200.0;
        const double want = valueAt(x, y, sx), got = valueAt(out.x, out.y, sx);
        if (std::isnan(want)) {
          QVERIFY(std::isnan(got));
          continue;
        }
        const double shown_want = std::clamp(want, y_lo - h / 2, y_hi + h / 2);
        const double shown_got = std::clamp(got, y_lo - h / 2, y_hi + h / 2);
        QVERIFY2(std::fabs(shown_want - shown_got) <= 1e-9 * (1 + h),
                 qPrintable(QStringLiteral("t %1 x %2: %3 vs %4").arg(t).arg(sx).arg(want).arg(got)));
      }
    }
  }

  void columnEdgesAreExactAtTheEnds() {
    const auto lin = columnEdges(0.1, 0.7, 3, false);
    QCOMPARE(lin.size(), std::size_t(4));
    QCOMPARE(lin.front(), 0.1);
    QCOMPARE(lin.back(), 0.7);
    const auto log = columnEdges(1, 1000, 3, true);
    QCOMPARE(log[1], 10.0);
    QVERIFY(std::fabs(log[2] - 100.0) < 1e-9);
  }
};

}  // namespace fs::ui

QTEST_APPLESS_MAIN(fs::ui::LevelOfDetailTest)
#include "level_of_detail_test.moc"
