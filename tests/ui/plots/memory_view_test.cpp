// MemoryView: a curve per (rank, part), the part / rank selectors choosing
// what is drawn, y read as bytes, and the latest figures per rank as a table.
#include "ui/plots/memory_view.h"

#include <qcustomplot.h>

#include <QTableWidget>
#include <QtTest>

#include "../screenshot.h"
#include "ui/plots/curve_plot.h"

namespace fs::ui {

class MemoryViewTest : public QObject {
  Q_OBJECT
 private slots:
  void seriesPerRankAndPart() {
    MemoryView view;
    view.resize(900, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    std::vector<double> steps{1, 2, 3};
    std::vector<std::vector<double>> bytes;  // rank-major, one vector per (rank, part)
    for (int rank = 0; rank < 2; ++rank)
      for (int part = 0; part < kMemoryPartCount; ++part)
        bytes.push_back(
            {double((rank + 1) << 20), double((part + 1) << 20), double((rank + part + 1) << 20)});
    for (int rank = 0; rank < 2; ++rank)
      for (int part = 0; part < kMemoryPartCount; ++part) {
        const auto* y = &bytes[std::size_t(rank * kMemoryPartCount + part)];
        view.setSeries(rank, MemoryPart(part), [&steps, y] { return CurveSpans{steps, *y}; });
      }
    CurvePlot* plot = view.plot();
    QCOMPARE(plot->curveNames().size(), 2 * kMemoryPartCount);
    QCOMPARE(MemoryView::curveName(1, MemoryPart::kGrads), QStringLiteral("rank 1 \u00b7 gradients"));

    // RSS of every rank at first.
    QVERIFY(plot->isCurveVisible(MemoryView::curveName(0, MemoryPart::kRss)));
    QVERIFY(plot->isCurveVisible(MemoryView::curveName(1, MemoryPart::kRss)));
    QVERIFY(!plot->isCurveVisible(MemoryView::curveName(0, MemoryPart::kParams)));

    view.showPart(std::nullopt);
    view.showRank(1);
    for (int part = 0; part < kMemoryPartCount; ++part) {
      QVERIFY(plot->isCurveVisible(MemoryView::curveName(1, MemoryPart(part))));
      QVERIFY(!plot->isCurveVisible(MemoryView::curveName(0, MemoryPart(part))));
    }
    view.showPart(MemoryPart::kOptimizer);
    view.showRank(std::nullopt);
    plot->flush();
    QVERIFY(plot->isCurveVisible(MemoryView::curveName(0, MemoryPart::kOptimizer)));
    QVERIFY(!plot->isCurveVisible(MemoryView::curveName(1, MemoryPart::kRss)));
    const auto* data = plot->lineGraph(MemoryView::curveName(1, MemoryPart::kOptimizer))->data().data();
    QCOMPARE(data->size(), 3);
    QCOMPARE(data->at(2)->value, double(5 << 20));
    // y reads as bytes, on the axis and in the crosshair.
    QCOMPARE(plot->valuesAt(2).split('\n').at(1), QStringLiteral("rank 0 \u00b7 optimizer state: 4.00 MiB"));
    RankMemoryFigures r;
    r.rank = 1;
    r.rss = 5 << 20;
    view.setLatest({r});
    plot->customPlot()->replot();
    QVERIFY(saveScreenshot(view, QStringLiteral("memory_view.png")));
  }

  // Memory that moves by a few hundred KiB around 196 MiB: every tick of the y
  // axis reads differently (three digits would print "196 MiB" on several).
  void narrowRangeTicksAreDistinct() {
    MemoryView view;
    view.resize(900, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const std::vector<double> steps{1, 2, 3, 4};
    const double mib = 1024.0 * 1024.0;
    const std::vector<double> rss{196.1 * mib, 196.4 * mib, 196.2 * mib, 196.9 * mib};
    view.setSeries(0, MemoryPart::kRss, [&] { return CurveSpans{steps, rss}; });
    CurvePlot* plot = view.plot();
    plot->flush();
    plot->customPlot()->replot();
    QCPAxis* y = plot->customPlot()->yAxis;
    QVERIFY2(y->range().size() < 2 * mib, qPrintable(QString::number(y->range().size())));
    const QVector<double> ticks = y->tickVector();
    const QVector<QString> labels = y->tickVectorLabels();
    QVERIFY(ticks.size() >= 3);
    QCOMPARE(labels.size(), ticks.size());
    for (qsizetype i = 1; i < labels.size(); ++i) {
      QVERIFY2(labels[i] != labels[i - 1], qPrintable(QStringList(labels.begin(), labels.end()).join(" | ")));
      QVERIFY2(labels[i].endsWith(QStringLiteral(" MiB")), qPrintable(labels[i]));
    }
  }

  void latestFiguresTable() {
    MemoryView view;
    RankMemoryFigures r0;
    r0.rank = 0;
    r0.step = 1500;
    r0.rss = std::int64_t(3) << 30;
    r0.peak_rss = std::int64_t(5) << 30;
    r0.params = 1536;
    r0.grads = 0;
    r0.device = std::int64_t(70) << 30;
    r0.device_reserved = std::int64_t(72) << 30;
    r0.device_reserved_peak = std::int64_t(75) << 30;
    r0.gathered_units = 2;
    RankMemoryFigures r1 = r0;
    r1.rank = 1;
    r1.device.reset();
    r1.device_reserved.reset();
    r1.device_reserved_peak.reset();
    r1.gathered_units.reset();
    view.setLatest({r0, r1});
    QTableWidget* t = view.table();
    QCOMPARE(t->rowCount(), 2);
    QCOMPARE(t->item(0, 0)->text(), QStringLiteral("0"));
    QCOMPARE(t->item(0, 1)->text(), QStringLiteral("1,500"));
    QCOMPARE(t->item(0, 2)->text(), QStringLiteral("3.00 GiB"));
    QCOMPARE(t->item(0, 3)->text(), QStringLiteral("5.00 GiB"));
    QCOMPARE(t->item(0, 4)->text(), QStringLiteral("1.50 KiB"));
    QCOMPARE(t->item(0, 4)->toolTip(), QStringLiteral("1,536 bytes"));
    QCOMPARE(t->item(0, 5)->text(), QStringLiteral("0 B"));
    QCOMPARE(t->item(0, 9)->text(), QStringLiteral("70.0 GiB"));
    QCOMPARE(t->item(1, 9)->text(), QStringLiteral("-"));  // no device: CPU
    QCOMPARE(t->horizontalHeaderItem(11)->text(), QStringLiteral("Reserved"));
    QCOMPARE(t->item(0, 11)->text(), QStringLiteral("72.0 GiB"));
    QCOMPARE(t->item(0, 12)->text(), QStringLiteral("75.0 GiB"));
    QCOMPARE(t->item(1, 11)->text(), QStringLiteral("-"));  // no device: CPU
    QCOMPARE(t->item(1, 12)->text(), QStringLiteral("-"));
    QCOMPARE(t->horizontalHeaderItem(13)->text(), QStringLiteral("Units gathered"));
    QCOMPARE(t->item(0, 13)->text(), QStringLiteral("2"));
    QCOMPARE(t->item(1, 13)->text(), QStringLiteral("-"));  // not FSDP
    view.setLatest({r1});
    QCOMPARE(t->rowCount(), 1);
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::MemoryViewTest)
#include "memory_view_test.moc"
