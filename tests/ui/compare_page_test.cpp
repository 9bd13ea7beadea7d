// The Compare tab: 50 run directories on one plot, every step of each read
// into its own store, aligned by step or by samples seen, and a reference
// curve from CSV overlaid; finished runs stop being followed once read.
#include "ui/compare/compare_page.h"

#include <QComboBox>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/app/history/run_dir_fixture.h"
#include "ui/plots/curve_plot.h"

namespace fs::ui {

class ComparePageTest : public QObject {
  Q_OBJECT

 private slots:
  void overlaysFiftyRunsAndAReferenceCurve() {
    QTemporaryDir root;
    QVERIFY(root.isValid());
    QStringList dirs;
    for (int i = 0; i < 50; ++i) {
      const std::string id = "run-" + std::to_string(i);
      dirs << test::writeRunDir(root.path(), QString::fromStdString(id),
                                test::finishedRun(id, 1'700'000'000'000 + i, 20 + i));
    }
    ComparePage page;
    page.resize(1200, 700);
    page.show();
    page.setRuns(dirs);
    QCOMPARE(page.runCount(), 50);
    QCOMPARE(page.plot()->curveNames().size(), 50);
    for (int i = 0; i < 50; ++i) {
      QTRY_COMPARE_WITH_TIMEOUT(page.pointsOf(i), static_cast<std::size_t>(20 + i), 20000);
    }
    // By samples seen: same points, another x.
    page.xAxisChoice()->setCurrentIndex(1);
    QCOMPARE(page.plot()->curveNames().size(), 50);
    QVERIFY(page.plot()->xLabel().contains(QStringLiteral("samples")));
    page.metricChoice()->setCurrentIndex(1);  // MMC4 loss
    QTRY_COMPARE_WITH_TIMEOUT(page.pointsOf(49), static_cast<std::size_t>(69), 20000);

    auto set = app::parseReferenceCurves("step,loss\n1,4.5\n2,4.4\n3,4.2\n", QStringLiteral("paper.csv"));
    QVERIFY(set.isOk());
    page.addReferenceCurves(set.value());
    QCOMPARE(page.plot()->curveNames().size(), 51);
    QVERIFY(page.plot()->curveNames().contains(QStringLiteral("paper.csv:loss")));
    QVERIFY(QString::fromStdString(page.plot()->csvText()).contains(QStringLiteral("4.2")));
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::ComparePageTest)
#include "compare_page_test.moc"
