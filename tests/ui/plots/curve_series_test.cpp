// Issue 43 item 2: CurveSeries, CurvePlot's per-curve data model, on its own
// (no widget): incremental intake, a replaced source read again, smoothing
// on the line only, buckets, the crosshair's lookup, the fit extents.
#include "ui/plots/curve_series.h"

#include <QtTest>
#include <cmath>
#include <limits>
#include <vector>

namespace fs::ui {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Arrays {
  std::vector<double> x, y;
  CurveSource source() {
    return [this] { return CurveSpans{x, y}; };
  }
  void push(double px, double py) {
    x.push_back(px);
    y.push_back(py);
  }
};

}  // namespace

class CurveSeriesTest : public QObject {
  Q_OBJECT

 private slots:
  void takesInOnlyWhatWasSynced() {
    Arrays a;
    for (int i = 0; i < 5; ++i) a.push(i, i * 10);
    CurveSeries s;
    s.setSource(a.source());
    QVERIFY(s.hasSource());
    QCOMPARE(s.drawn().size(), std::size_t{0});  // nothing taken in yet
    s.sync();
    QCOMPARE(s.drawn().size(), std::size_t{5});
    a.push(5, 50);
    QCOMPARE(s.drawn().size(), std::size_t{5});  // appended, not yet taken in
    QCOMPARE(s.raw().size(), std::size_t{6});
    s.sync();
    QCOMPARE(s.drawn().size(), std::size_t{6});
    QCOMPARE(s.drawn().y[5], 50.0);
  }

  void aShrunkSourceIsReadAgain() {
    Arrays a;
    for (int i = 0; i < 8; ++i) a.push(i, 1);
    CurveSeries s;
    s.setSource(a.source());
    s.sync();
    a.x = {0, 1};
    a.y = {7, 8};  // replaced by a shorter array (another run)
    s.sync();
    QCOMPARE(s.drawn().size(), std::size_t{2});
    QCOMPARE(s.lastDrawableAt(100, false), std::size_t{1});
    QCOMPARE(s.drawn().y[1], 8.0);
  }

  void smoothingChangesTheLineNotTheRawValues() {
    Arrays a;
    for (double y : {0.0, 10.0, 0.0, 10.0}) a.push(a.x.size(), y);
    CurveSeries s;
    s.setSource(a.source());
    s.setSmoothing(Smoothing{SmoothingKind::kRunningMean, 2});
    s.sync();
    QCOMPARE(s.drawn().y[3], 5.0);  // mean of the last two
    QCOMPARE(s.raw().y[3], 10.0);
    s.setSmoothing(Smoothing{});
    s.sync();
    QCOMPARE(s.drawn().y[3], 10.0);
  }

  void bucketsKeepTheLastValueAndTheRawBand() {
    Arrays a;
    const std::vector<double> ys = {1, 5, 2, 3, 4, 6, 7, 0.5, 8, 9};
    for (std::size_t i = 0; i < ys.size(); ++i) a.push(double(i), ys[i]);
    CurveSeries s;
    s.setSource(a.source());
    const std::vector<double> edges = columnEdges(-0.5, 9.5, 2, false);
    s.bucket(edges, BucketOptions{});  // syncs first
    const ColumnBuckets& b = s.buckets();
    QCOMPARE(b.size(), std::size_t{2});
    QCOMPARE(b.line[0], 4.0);
    QCOMPARE(b.low[0], 1.0);
    QCOMPARE(b.high[0], 5.0);
    QCOMPARE(b.line[1], 9.0);
    QCOMPARE(b.low[1], 0.5);
    QCOMPARE(b.high[1], 9.0);
    double lower = std::numeric_limits<double>::infinity(), upper = -lower;
    s.widenYExtent(5, 10, &lower, &upper);  // only the second column's x (9) is inside
    QCOMPARE(lower, 0.5);
    QCOMPARE(upper, 9.0);
    s.clearBuckets();
    QCOMPARE(s.buckets().size(), std::size_t{0});
  }

  void lastDrawableSkipsGapsAndNonPositiveOnALogAxis() {
    Arrays a;
    a.push(1, 3);
    a.push(2, -1);
    a.push(3, kNaN);
    CurveSeries s;
    s.setSource(a.source());
    s.sync();
    QCOMPARE(s.lastDrawableAt(3, false), std::size_t{1});  // NaN is a gap
    QCOMPARE(s.lastDrawableAt(3, true), std::size_t{0});   // log y: -1 is not drawn
    QCOMPARE(s.lastDrawableAt(0.5, false), MinMaxPyramid::npos);
  }

  void xExtentOfTheDrawnPoints() {
    Arrays a;
    for (double x : {-2.0, 0.0, 3.0, 8.0}) a.push(x, 1);
    CurveSeries s;
    s.setSource(a.source());
    double lower = 0, upper = 0;
    QVERIFY(!s.xExtent(false, &lower, &upper));  // nothing taken in
    s.sync();
    QVERIFY(s.xExtent(false, &lower, &upper));
    QCOMPARE(lower, -2.0);
    QCOMPARE(upper, 8.0);
    QVERIFY(s.xExtent(true, &lower, &upper));  // log x: only x > 0
    QCOMPARE(lower, 3.0);
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::CurveSeriesTest)
#include "curve_series_test.moc"
