// Tick labels with the digits they need to differ (axis_format.h): close ticks
// of bytes, losses and learning rates get distinct labels; ticks that already
// differ at three digits keep short labels.
#include "ui/plots/axis_format.h"

#include <QtTest>

#include "ui/plots/format_units.h"

namespace fs::ui {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

void verifyAdjacentDistinct(const QVector<double>& ticks, const QStringList& labels) {
  QCOMPARE(labels.size(), ticks.size());
  for (qsizetype i = 1; i < ticks.size(); ++i)
    QVERIFY2(labels[i] != labels[i - 1], qPrintable(labels.join(QStringLiteral(" | "))));
}

}  // namespace

class AxisFormatTest : public QObject {
  Q_OBJECT
 private slots:
  void bytesGetADigitWhenThreeReadTheSame() {
    // The Memory tab's "196 MiB" twice: 196.0 and 196.5 MiB.
    const QVector<double> ticks = {195.5 * kMiB, 196.0 * kMiB, 196.5 * kMiB, 197.0 * kMiB};
    const QStringList labels = distinctTickLabels(ticks, AxisFormat::bytes());
    verifyAdjacentDistinct(ticks, labels);
    QCOMPARE(labels, QStringList({QStringLiteral("195.5 MiB"), QStringLiteral("196.0 MiB"),
                                  QStringLiteral("196.5 MiB"), QStringLiteral("197.0 MiB")}));
    // Far apart: three digits, as before.
    QCOMPARE(distinctTickLabels({100 * kMiB, 150 * kMiB, 200 * kMiB}, AxisFormat::bytes()),
             QStringList({QStringLiteral("100 MiB"), QStringLiteral("150 MiB"), QStringLiteral("200 MiB")}));
    // Very close: as many digits as it takes.
    const QVector<double> close = {196 * kMiB, 196 * kMiB + 2048, 196 * kMiB + 4096};
    verifyAdjacentDistinct(close, distinctTickLabels(close, AxisFormat::bytes()));
  }

  void bytesStepInBinaryUnits() {
    const auto unit = AxisFormat::bytes().unit;
    QCOMPARE(unit(500), 1.0);
    QCOMPARE(unit(196 * kMiB), kMiB);
    QCOMPARE(unit(3.0 * 1024 * kMiB), 1024 * kMiB);
  }

  void lossesAndLearningRates() {
    const QVector<double> losses = {4.8312, 4.83125, 4.8313};
    const QStringList lossLabels = distinctTickLabels(losses, AxisFormat::plain());
    verifyAdjacentDistinct(losses, lossLabels);
    QCOMPARE(lossLabels.at(1), QStringLiteral("4.83125"));
    QCOMPARE(distinctTickLabels({2, 2.5, 3}, AxisFormat::plain()),
             QStringList({QStringLiteral("2"), QStringLiteral("2.5"), QStringLiteral("3")}));
    const QVector<double> lrs = {1e-5, 1.00002e-5, 1.00004e-5};
    const QStringList lrLabels = distinctTickLabels(lrs, AxisFormat::plain());
    verifyAdjacentDistinct(lrs, lrLabels);
    QCOMPARE(lrLabels.at(0), QStringLiteral("1e-05"));
    // Throughput in the millions, close together.
    const QVector<double> rates = {1234500, 1234600, 1234700};
    verifyAdjacentDistinct(rates, distinctTickLabels(rates, AxisFormat::plain()));
  }

  void equalTicksMayShareALabel() {
    QCOMPARE(distinctTickLabels({1, 1}, AxisFormat::plain()),
             QStringList({QStringLiteral("1"), QStringLiteral("1")}));
    QVERIFY(distinctTickLabels({}, AxisFormat::bytes()).isEmpty());
  }

  void formatBytesWithDigits() {
    QCOMPARE(formatBytes(std::int64_t(196 * kMiB), 4), QStringLiteral("196.0 MiB"));
    QCOMPARE(formatBytes(std::int64_t(196 * kMiB), 3), QStringLiteral("196 MiB"));
    QCOMPARE(formatBytes(std::int64_t(196 * kMiB), 1), QStringLiteral("196 MiB"));  // never under three
    QCOMPARE(formatBytes(1536, 5), QStringLiteral("1.5000 KiB"));
    QCOMPARE(formatBytes(512, 6), QStringLiteral("512 B"));
    QCOMPARE(formatNumber(0.0001, 3), QStringLiteral("0.0001"));
  }
};

}  // namespace fs::ui

QTEST_GUILESS_MAIN(fs::ui::AxisFormatTest)
#include "axis_format_test.moc"
