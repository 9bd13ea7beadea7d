// A recorded-like run with a loss-spike rollback and per-rank heartbeats
// (tests/app/monitor/rollback_run.h) through the real RunMonitor and the views: the
// loss plot's rollback marker and dimmed abandoned steps, the rollbacks table, the
// Ranks tab's heartbeat board, the Gates tab's curves, History's rollback count and
// Compare's dimmed segment, all asserted from the widgets' data (never pixels).
// Writes <build>/tests/screenshots/rollback.png (-> docs/images/rollback.png).
#include <qcustomplot.h>

#include <QComboBox>
#include <QLabel>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "app/control/control_client.h"
#include "app/history/run_dir_reader.h"
#include "app/monitor/run_monitor.h"
#include "tests/app/history/run_dir_fixture.h"
#include "tests/app/monitor/rollback_run.h"
#include "tests/ui/screenshot.h"
#include "ui/compare/compare_page.h"
#include "ui/history/history_table_model.h"
#include "ui/monitor/heartbeat_table.h"
#include "ui/monitor/monitor_page.h"
#include "ui/monitor/rollback_marks.h"
#include "ui/monitor/rollback_table.h"
#include "ui/plots/curve_plot.h"

namespace fs::ui {
namespace {

constexpr int kWait = 20000;  // ms; conditions, never durations, are asserted

// The run directory (run.json, config.yaml, events.jsonl) of the rollback run.
QString writeRollbackRun(const QString& root) {
  test::FixtureRun run;
  run.manifest =
      test::fixtureManifest("run-rollback", app::testing::kRollbackT0 - 500, protocol::RunState::kRunning);
  for (const protocol::Event& e : app::testing::rollbackRunEvents()) run.events.push_back({e.t, e.body});
  return test::writeRunDir(root, QStringLiteral("rollback-run"), run);
}

app::RunMonitor::Options quietOptions() {
  app::RunMonitor::Options o;
  o.poll_interval_ms = 5;
  o.follow_logs = false;
  o.process_check_interval_ms = 0;
  o.stall_check_interval_ms = 0;
  return o;
}

// The keys (x) of a graph's drawn points.
std::vector<double> keys(const QCPGraph* g) {
  std::vector<double> out;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) out.push_back(it->key);
  return out;
}

}  // namespace

class RollbackViewsTest : public QObject {
  Q_OBJECT

 private slots:
  void monitorPageShowsTheRollbackTheRanksAndTheGates() {
    QTemporaryDir root;
    QVERIFY(root.isValid());
    const QString runDir = writeRollbackRun(root.path());
    app::RunMonitor monitor(quietOptions());
    app::ControlClient control;
    MonitorPage page(&monitor, &control);
    page.resize(1400, 900);
    page.show();
    monitor.attach(runDir);
    page.runAttached(runDir);
    QTRY_COMPARE_WITH_TIMEOUT(monitor.status().events, std::uint64_t{22}, kWait);

    // The list of rollbacks.
    RollbackTable* table = page.rollbackTable();
    QVERIFY(table->isVisibleTo(&page));
    QCOMPARE(table->rowCount(), 1);
    QCOMPARE(table->text(0, RollbackTable::kSteps), QStringLiteral("step 10 \u2192 6"));
    QCOMPARE(table->text(0, RollbackTable::kDataset), QStringLiteral("laion"));
    QVERIFY(table->text(0, RollbackTable::kReason).contains(QStringLiteral("14.2 MADs")));
    QCOMPARE(table->text(0, RollbackTable::kSkipped), QStringLiteral("6"));
    QCOMPARE(table->text(0, RollbackTable::kLrFactor), QStringLiteral("\u00d7 0.5 for 20 steps"));

    // The loss plot: a marker at the spike, the abandoned steps 7..10 dimmed, the
    // curve that counts 1..12 without the spike.
    CurvePlot* loss = page.lossPlot();
    QCOMPARE(loss->markers().size(), std::size_t{1});
    QCOMPARE(loss->markers()[0].x, 10.0);
    QCOMPARE(loss->markers()[0].label, QStringLiteral("rollback 10\u21926"));
    const QString abandoned = abandonedCurveName(QStringLiteral("loss/laion"), 0);
    QVERIFY(loss->hasCurve(abandoned));
    QVERIFY(loss->isCurveDimmed(abandoned));
    QVERIFY(!loss->isCurveDimmed(QStringLiteral("loss/laion")));
    loss->flush();
    QCOMPARE(keys(loss->lineGraph(abandoned)), (std::vector<double>{7, 8, 9, 10}));
    QCOMPARE(loss->lineGraph(abandoned)->data()->at(3)->value, 9.8);
    const auto main = keys(loss->lineGraph(QStringLiteral("loss/laion")));
    QCOMPARE(main.front(), 1.0);
    QCOMPARE(main.back(), 12.0);
    QVERIFY(std::is_sorted(main.begin(), main.end()));
    QVERIFY(std::adjacent_find(main.begin(), main.end()) == main.end());  // no step twice
    // On wall time the marker moves to the rollback event's time.
    for (int i = 0; i < page.xAxisChoice()->count(); ++i) {
      if (page.xAxisChoice()->itemText(i).contains(QStringLiteral("wall")))
        page.xAxisChoice()->setCurrentIndex(i);
    }
    QCOMPARE(loss->markers()[0].x, static_cast<double>(app::testing::kRollbackT0 + 11000) / 1000.0);
    page.xAxisChoice()->setCurrentIndex(0);
    QCOMPARE(loss->markers()[0].x, 10.0);

    // The Ranks tab: rank 1 is the one the others wait on.
    HeartbeatTable* beats = page.heartbeatTable();
    QCOMPARE(beats->rowCount(), 2);
    QCOMPARE(beats->text(0, HeartbeatTable::kSeq), QStringLiteral("101"));
    QCOMPARE(beats->text(1, HeartbeatTable::kCollective), QStringLiteral("all_gather lang_encoder.layers.1"));
    QCOMPARE(beats->text(1, HeartbeatTable::kBehind), QStringLiteral("4"));
    QCOMPARE(beats->text(1, HeartbeatTable::kStuck), QStringLiteral("2.0 s"));
    QVERIFY(beats->isWaitedOn(1));
    QVERIFY(!beats->isWaitedOn(0));
    QVERIFY(page.heartbeatSummary()->text().contains(QStringLiteral("wait on rank 1")));

    // The Gates tab: per layer attn and ff tanh values, as the step events carry them.
    CurvePlot* gates = page.gatesPlot();
    QCOMPARE(page.tabs()->tabText(page.tabs()->indexOf(gates)), QStringLiteral("Gates"));
    QStringList names = gates->curveNames();
    names.sort();
    QCOMPARE(names, (QStringList{"gate/attn/0", "gate/attn/4", "gate/ff/0", "gate/ff/4"}));
    gates->flush();
    for (const auto& [name, value] : std::vector<std::pair<QString, double>>{
             {"gate/attn/0", 0.01}, {"gate/ff/0", 0.02}, {"gate/attn/4", 0.03}, {"gate/ff/4", 0.04}}) {
      const QCPGraph* g = gates->lineGraph(name);
      QVERIFY(!g->data()->isEmpty());
      QCOMPARE(g->data()->at(g->data()->size() - 1)->key, 12.0);
      QCOMPARE(g->data()->at(g->data()->size() - 1)->value, value);
    }
    QVERIFY(gates->valuesAt(12).contains(QStringLiteral("gate/ff/4: 0.04")));

    QTest::qWait(100);  // posted layout requests and the plots' replot timer
    QVERIFY(saveScreenshot(*page.tabs()->widget(0), QStringLiteral("rollback.png")));
    page.tabs()->setCurrentWidget(beats->parentWidget());
    QVERIFY(saveScreenshot(*page.tabs(), QStringLiteral("heartbeat-board.png")));
  }

  void historyCountsTheRollbacks() {
    QTemporaryDir root;
    QVERIFY(root.isValid());
    auto read = app::readRunDirectory(writeRollbackRun(root.path()));
    QVERIFY2(read.isOk(), read.status().message().c_str());
    QCOMPARE(read->record.rollbacks, 1);
    app::RunRecord none = read->record;
    none.rollbacks = 0;
    HistoryTableModel model;
    model.setRuns({read->record, none});
    QCOMPARE(model.headerData(HistoryTableModel::kRollbacks, Qt::Horizontal, Qt::DisplayRole).toString(),
             QStringLiteral("Rollbacks"));
    QCOMPARE(model.data(model.index(0, HistoryTableModel::kRollbacks), Qt::DisplayRole).toString(),
             QStringLiteral("1"));
    QCOMPARE(model.data(model.index(1, HistoryTableModel::kRollbacks), Qt::DisplayRole).toString(),
             QString());
  }

  void compareDrawsTheAbandonedSegmentDimmed() {
    QTemporaryDir root;
    QVERIFY(root.isValid());
    const QString runDir = writeRollbackRun(root.path());
    ComparePage page;
    page.resize(1000, 600);
    page.show();
    page.setRuns({runDir});
    QTRY_COMPARE_WITH_TIMEOUT(page.pointsOf(0), std::size_t{12}, kWait);
    const QString abandoned = abandonedCurveName(QStringLiteral("rollback-run"), 0);
    QTRY_VERIFY_WITH_TIMEOUT(page.plot()->hasCurve(abandoned), kWait);
    QVERIFY(page.plot()->isCurveDimmed(abandoned));
    QVERIFY(!page.plot()->isCurveDimmed(QStringLiteral("rollback-run")));
    page.plot()->flush();
    QCOMPARE(keys(page.plot()->lineGraph(abandoned)), (std::vector<double>{7, 8, 9, 10}));
    // Another metric keeps it: the abandoned segment of that metric.
    page.metricChoice()->setCurrentIndex(1);  // MMC4 loss
    QVERIFY(page.plot()->hasCurve(abandoned));
    QVERIFY(page.plot()->isCurveDimmed(abandoned));
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::RollbackViewsTest)
#include "rollback_views_test.moc"
