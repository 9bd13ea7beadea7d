// CurvePlot: what its graphs hold after zooms, appends, resets, log axes and
// smoothing; the crosshair's values; exports that are valid files and a CSV
// with every point.
#include "ui/plots/curve_plot.h"

#include <qcustomplot.h>

#include <QImage>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <limits>
#include <vector>

namespace fs::ui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A series store stand-in: two arrays that grow by appending.
struct Series {
  std::vector<double> x, y;
  CurveSource source() {
    return [this] { return CurveSpans{x, y}; };
  }
  void append(double px, double py) {
    x.push_back(px);
    y.push_back(py);
  }
};

std::vector<QCPGraphData> points(QCPGraph* graph) {
  return {graph->data()->constBegin(), graph->data()->constEnd()};
}

double maxValue(QCPGraph* graph) {
  double m = -std::numeric_limits<double>::infinity();
  for (const auto& p : points(graph))
    if (!std::isnan(p.value)) m = std::max(m, p.value);
  return m;
}

}  // namespace

class CurvePlotTest : public QObject {
  Q_OBJECT
 private slots:
  void init() {
    plot_ = std::make_unique<CurvePlot>();
    plot_->resize(800, 400);
    plot_->show();
    QVERIFY(QTest::qWaitForWindowExposed(plot_.get()));
    plot_->customPlot()->replot();  // lays the axis rect out: its width is the column count
  }
  void cleanup() { plot_.reset(); }

  void fullRangeHasOneBucketPerColumnAndKeepsTheSpike() {
    Series s;
    for (int i = 0; i < 100000; ++i) s.append(i, std::sin(i * 0.001));
    s.y[54321] = 1e6;
    plot_->addCurve("loss", s.source());
    plot_->flush();
    const int columns = plot_->customPlot()->axisRect()->width();
    QVERIFY(columns > 100);
    QVERIFY(int(points(plot_->lineGraph("loss")).size()) <= columns);
    QCOMPARE(maxValue(plot_->bandHighGraph("loss")), 1e6);
    QVERIFY(maxValue(plot_->lineGraph("loss")) < 2);  // the line is the last value per column
    QVERIFY(plot_->isFollowing());
    QCOMPARE(plot_->customPlot()->xAxis->range().lower, 0.0);
    QCOMPARE(plot_->customPlot()->xAxis->range().upper, 99999.0);
  }

  void zoomingInReBucketsToTheRawPoints() {
    Series s;
    for (int i = 0; i < 100000; ++i) s.append(i, i % 1000);
    plot_->addCurve("loss", s.source());
    plot_->flush();
    plot_->setXRange(1000, 1100);
    QVERIFY(!plot_->isFollowing());
    const auto line = points(plot_->lineGraph("loss"));
    // 101 points inside (fewer than columns: each is its own bucket) plus one neighbour each side.
    QCOMPARE(int(line.size()), 103);
    QCOMPARE(line.front().key, 999.0);
    QCOMPARE(line.back().key, 1101.0);
    for (const auto& p : line) QCOMPARE(p.value, double(int(p.key) % 1000));
    // Zoom out again: back to at most one point per column.
    plot_->setXRange(0, 99999);
    QVERIFY(int(points(plot_->lineGraph("loss")).size()) <= plot_->customPlot()->axisRect()->width() + 2);
  }

  void wheelZoomReBuckets() {
    Series s;
    for (int i = 0; i < 200000; ++i) s.append(i, i % 7);
    plot_->addCurve("loss", s.source());
    plot_->flush();
    const auto before = points(plot_->lineGraph("loss")).size();
    QCustomPlot* cp = plot_->customPlot();
    const QPoint centre = cp->axisRect()->rect().center();
    for (int k = 0; k < 40; ++k) {
      QWheelEvent wheel(centre, cp->mapToGlobal(centre), QPoint(), QPoint(0, 120), Qt::NoButton,
                        Qt::NoModifier, Qt::NoScrollPhase, false);
      QApplication::sendEvent(cp, &wheel);
    }
    const QCPRange range = cp->xAxis->range();
    QVERIFY(range.size() < 1000);  // zoomed far in
    QVERIFY(!plot_->isFollowing());
    // The wheel zoomed y too, so the line was clamped to the view (view_clip.h); show all of y.
    plot_->setYRange(-1, 8);
    const auto line = points(plot_->lineGraph("loss"));
    for (std::size_t i = 1; i + 1 < line.size(); ++i) {
      QCOMPARE(line[i].key, std::floor(line[i].key));  // raw points, not column centres
      QCOMPARE(line[i].value, double(int(line[i].key) % 7));
    }
    QVERIFY(line.size() != before);
  }

  void appendsAreCoalescedAndFollowed() {
    Series s;
    plot_->addCurve("loss", s.source());
    QSignalSpy replots(plot_->customPlot(), &QCustomPlot::afterReplot);
    for (int i = 0; i < 500; ++i) {
      s.append(i, i);
      plot_->dataGrew();
    }
    QVERIFY(QTest::qWaitFor([&] { return !points(plot_->lineGraph("loss")).empty(); }, 5000));
    QVERIFY(replots.wait(5000) || replots.count() > 0);
    QVERIFY(replots.count() < 50);  // 500 appends, a handful of redraws
    QCOMPARE(plot_->customPlot()->xAxis->range().upper, 499.0);
    s.append(1000, 3);
    plot_->dataGrew();
    plot_->flush();
    QCOMPARE(plot_->customPlot()->xAxis->range().upper, 1000.0);
    QCOMPARE(points(plot_->lineGraph("loss")).back().value, 3.0);
  }

  void aHiddenPlotCatchesUpWhenShown() {
    plot_->hide();
    plot_->setReplotInterval(0);
    Series s;
    for (int i = 0; i < 100; ++i) s.append(i, i);
    plot_->addCurve("loss", s.source());
    for (int k = 0; k < 5; ++k) QCoreApplication::processEvents();  // the tick comes and is skipped
    QVERIFY(points(plot_->lineGraph("loss")).empty());
    plot_->show();
    QVERIFY(QTest::qWaitFor([&] { return points(plot_->lineGraph("loss")).size() == 100; }, 5000));
  }

  void resetReadsEverythingAgain() {
    Series s;
    for (int i = 0; i < 1000; ++i) s.append(i, 1);
    plot_->addCurve("loss", s.source());
    plot_->flush();
    // Another x axis chosen: same y, new x, and this time the store is shorter.
    s.x.assign({0, 10, 20});
    s.y.assign({5, 6, 7});
    plot_->resetData();
    plot_->flush();
    const auto line = points(plot_->lineGraph("loss"));
    QCOMPARE(int(line.size()), 3);
    QCOMPARE(line[2].key, 20.0);
    QCOMPARE(line[2].value, 7.0);
  }

  void nanIsAGapInTheDrawnLine() {
    Series s;
    for (int i = 0; i < 20; ++i) s.append(i, i >= 8 && i < 12 ? kNaN : 1.0);
    plot_->addCurve("loss", s.source());
    plot_->flush();
    const auto line = points(plot_->lineGraph("loss"));
    int gaps = 0;
    for (const auto& p : line) gaps += std::isnan(p.value);
    QCOMPARE(gaps, 1);  // one break for the run of four NaNs
  }

  void logYSkipsNonPositiveValues() {
    Series s;
    for (int i = 1; i <= 100; ++i) s.append(i, i % 2 ? -double(i) : double(i));
    plot_->addCurve("loss", s.source());
    plot_->setLogY(true);
    plot_->setLogX(true);
    plot_->flush();
    QCOMPARE(plot_->customPlot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    for (const auto& p : points(plot_->lineGraph("loss"))) QVERIFY(std::isnan(p.value) || p.value > 0);
    for (const auto& p : points(plot_->bandLowGraph("loss"))) QVERIFY(std::isnan(p.value) || p.value > 0);
    QVERIFY(plot_->customPlot()->yAxis->range().lower > 0);
  }

  void smoothingIsDrawnAndShownInTheCrosshair() {
    Series s;
    for (int i = 0; i < 10; ++i) s.append(i, i % 2 ? 10.0 : 0.0);
    plot_->setAxisLabels("step", "loss");
    plot_->addCurve("laion", s.source());
    plot_->setSmoothing({SmoothingKind::kRunningMean, 2});
    plot_->flush();
    const auto line = points(plot_->lineGraph("laion"));
    QCOMPARE(int(line.size()), 10);
    QCOMPARE(line[0].value, 0.0);
    for (int i = 1; i < 10; ++i) QCOMPARE(line[i].value, 5.0);
    QCOMPARE(plot_->valuesAt(3.5), QStringLiteral("step: 3.5\nlaion: 5 (raw 10)"));
    plot_->setSmoothing({});
    plot_->flush();
    QCOMPARE(points(plot_->lineGraph("laion"))[3].value, 10.0);
    QCOMPARE(plot_->valuesAt(3.5), QStringLiteral("step: 3.5\nlaion: 10"));
    QCOMPARE(plot_->valuesAt(-1), QStringLiteral("step: -1\nlaion: -"));
  }

  void smoothingLeavesTheSpikeInTheBand() {
    Series s;
    for (int i = 0; i < 100000; ++i) s.append(i, 1.0);
    s.y[77777] = 1000;
    plot_->addCurve("loss", s.source());
    plot_->setSmoothing({SmoothingKind::kEma, 0.99});
    plot_->flush();
    QCOMPARE(maxValue(plot_->bandHighGraph("loss")), 1000.0);
    QVERIFY(maxValue(plot_->lineGraph("loss")) < 20);   // 1 + 999 * 0.01 at most
    QVERIFY(maxValue(plot_->lineGraph("loss")) > 1.5);  // but the smoothed line does bump
    QVERIFY(plot_->customPlot()->yAxis->range().upper >= 1000);
  }

  void exportsAreValidFiles() {
    Series a, b;
    for (int i = 0; i < 5000; ++i) a.append(i, std::sin(i * 0.01) + 0.3 * std::sin(i * 1.7));
    for (int i = 0; i < 3000; i += 2) b.append(i + 0.5, std::cos(i * 0.01) + 0.2 * std::cos(i * 2.3));
    a.y[2500] = 3;  // a one-point spike: its column's band reaches it
    b.y[10] = kNaN;
    plot_->setAxisLabels("step", "loss");
    plot_->addCurve("laion", a.source());
    plot_->addCurve("mmc4, val", b.source());
    plot_->flush();
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QSignalSpy done(plot_.get(), &CurvePlot::exportFinished);
    const QStringList names{"p.png", "p.svg", "p.pdf", "p.csv"};
    for (const QString& name : names) {
      PlotExportFormat format;
      QVERIFY(CurvePlot::formatForPath(name, &format));
      plot_->exportTo(dir.filePath(name), format, QSize(640, 360));
    }
    QVERIFY(QTest::qWaitFor([&] { return done.count() == names.size(); }, 20000));
    for (const auto& call : done) QCOMPARE(call.at(1).toString(), QString());

    // For people: a picture of the plot in the build tree.
    QDir().mkpath(QStringLiteral(FS_BINARY_DIR "/tests/screenshots"));
    plot_->showCrosshair(1200);
    for (const char* name : {"curve_plot.png", "curve_plot_smoothed.png"}) {
      QFile shot(QStringLiteral(FS_BINARY_DIR "/tests/screenshots/") + QLatin1String(name));
      QVERIFY(shot.open(QIODevice::WriteOnly));
      shot.write(plot_->render(PlotExportFormat::kPng, QSize(1200, 500)));
      plot_->setSmoothing({SmoothingKind::kEma, 0.9});
    }
    plot_->setSmoothing({});

    QImage png(dir.filePath("p.png"));
    QVERIFY(!png.isNull());
    QCOMPARE(png.size(), QSize(640, 360));
    QSet<QRgb> colours;
    for (int y = 0; y < png.height(); y += 3)
      for (int x = 0; x < png.width(); x += 3) colours.insert(png.pixel(x, y));
    QVERIFY(colours.size() > 5);  // axes, text, two curves, bands: not a blank image

    auto head = [&](const QString& name, int n) {
      QFile f(dir.filePath(name));
      return f.open(QIODevice::ReadOnly) ? f.read(n) : QByteArray();
    };
    const QByteArray svg = head("p.svg", 64).trimmed();
    QVERIFY(svg.startsWith("<?xml") || svg.startsWith("<svg"));
    QVERIFY(head("p.svg", 1 << 22).contains("<path"));
    QVERIFY(head("p.pdf", 5).startsWith("%PDF"));

    QFile csv(dir.filePath("p.csv"));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const QList<QByteArray> rows = csv.readAll().split('\n');
    QCOMPARE(rows[0], QByteArray("step,laion,\"mmc4, val\""));
    // Every point once: the x values of a and b never coincide, so one row each.
    QCOMPARE(rows.size() - 2, int(a.x.size() + b.x.size()));  // header and the empty string after the last \n
    int a_seen = 0, b_seen = 0, nan_seen = 0;
    for (int r = 1; r + 1 < rows.size(); ++r) {
      const QList<QByteArray> cells = rows[r].split(',');
      QCOMPARE(cells.size(), 3);
      const double x = cells[0].toDouble();
      if (!cells[1].isEmpty()) {
        QCOMPARE(cells[1].toDouble(), a.y[std::size_t(x)]);
        ++a_seen;
      }
      if (!cells[2].isEmpty()) {
        if (cells[2] == "nan")
          ++nan_seen;
        else
          QCOMPARE(cells[2].toDouble(), b.y[std::size_t((x - 0.5) / 2)]);
        ++b_seen;
      }
    }
    QCOMPARE(a_seen, int(a.x.size()));
    QCOMPARE(b_seen, int(b.x.size()));
    QCOMPARE(nan_seen, 1);
  }

  void exportAtAnotherSizeLeavesTheScreenAsItWas() {
    Series s;
    for (int i = 0; i < 100000; ++i) s.append(i, i % 13);
    plot_->addCurve("a", s.source());
    plot_->flush();
    plot_->customPlot()->replot();  // margins for the fitted range's tick labels
    const int columns = plot_->customPlot()->axisRect()->width();
    const auto before = points(plot_->lineGraph("a")).size();
    const QImage wide = QImage::fromData(plot_->render(PlotExportFormat::kPng, QSize(1800, 500)));
    QCOMPARE(wide.size(), QSize(1800, 500));
    QCOMPARE(plot_->customPlot()->axisRect()->width(), columns);
    QCOMPARE(points(plot_->lineGraph("a")).size(), before);
  }

  void csvSharesRowsWhereXCoincides() {
    Series a, b;
    a.x = {1, 2, 2, 3};
    a.y = {10, 20, 21, 30};
    b.x = {2, 4};
    b.y = {200, 400};
    plot_->addCurve("a", a.source());
    plot_->addCurve("b", b.source());
    QCOMPARE(QString::fromStdString(plot_->csvText()),
             QStringLiteral("x,a,b\n1,10,\n2,20,200\n2,21,\n3,30,\n4,,400\n"));
  }

  void hiddenCurvesAreNotDrawn() {
    Series a;
    for (int i = 0; i < 100; ++i) a.append(i, i);
    plot_->addCurve("a", a.source());
    plot_->setCurveVisible("a", false);
    plot_->flush();
    QVERIFY(points(plot_->lineGraph("a")).empty());
    QVERIFY(!plot_->lineGraph("a")->visible());
    plot_->setCurveVisible("a", true);
    plot_->flush();
    QCOMPARE(int(points(plot_->lineGraph("a")).size()), 100);
    plot_->removeCurve("a");
    QVERIFY(!plot_->hasCurve("a"));
    QCOMPARE(plot_->customPlot()->graphCount(), 0);
  }

  void resizingReBucketsForTheNewWidth() {
    Series s;
    for (int i = 0; i < 100000; ++i) s.append(i, i % 13);
    plot_->addCurve("a", s.source());
    plot_->flush();
    const int narrow = int(points(plot_->lineGraph("a")).size());
    plot_->resize(1600, 400);
    plot_->customPlot()->replot();  // lays out the new width, which re-buckets
    const int wide = int(points(plot_->lineGraph("a")).size());
    QVERIFY(wide > narrow);
    QVERIFY(wide <= plot_->customPlot()->axisRect()->width());
  }

 private:
  std::unique_ptr<CurvePlot> plot_;
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::CurvePlotTest)
#include "curve_plot_test.moc"
