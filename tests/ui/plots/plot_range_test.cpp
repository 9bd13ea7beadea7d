// Issue 43 item 2: CurvePlot's range policy (plot_range.h) on its own: the
// room a fitted x and y get around the data.
#include "ui/plots/plot_range.h"

#include <QtTest>

namespace fs::ui {

class PlotRangeTest : public QObject {
  Q_OBJECT

 private slots:
  void xIsTheDataExceptASingleValueGetsRoom() {
    const AxisRange span = fittedXRange(2, 40, false);
    QCOMPARE(span.lower, 2.0);
    QCOMPARE(span.upper, 40.0);
    const AxisRange one = fittedXRange(3, 3, false);
    QCOMPARE(one.lower, 2.5);
    QCOMPARE(one.upper, 3.5);
    const AxisRange oneLog = fittedXRange(8, 8, true);
    QCOMPARE(oneLog.lower, 4.0);
    QCOMPARE(oneLog.upper, 16.0);
  }

  void yGetsFivePercentEitherSide() {
    const AxisRange y = fittedYRange(0, 100, false);
    QCOMPARE(y.lower, -5.0);
    QCOMPARE(y.upper, 105.0);
    const AxisRange flat = fittedYRange(200, 200, false);  // 5% of the value
    QCOMPARE(flat.lower, 190.0);
    QCOMPARE(flat.upper, 210.0);
    const AxisRange zero = fittedYRange(0, 0, false);  // at least 0.5
    QCOMPARE(zero.lower, -0.5);
    QCOMPARE(zero.upper, 0.5);
  }

  void logYPadsByAFactor() {
    const AxisRange y = fittedYRange(1, 1e20, true);  // pad = (1e20)^0.05 = 10
    QCOMPARE(y.lower, 0.1);
    QCOMPARE(y.upper, 1e21);
    const AxisRange one = fittedYRange(4, 4, true);  // no span: x2 either way
    QCOMPARE(one.lower, 2.0);
    QCOMPARE(one.upper, 8.0);
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::PlotRangeTest)
#include "plot_range_test.moc"
