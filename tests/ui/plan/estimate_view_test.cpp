// Estimate vs measured on a real run: a tiny FSDP training of a few steps by
// the real flamingo-train, followed by a MonitorPage; its Estimate tab shows
// the planner's figures for that run (the CLI's JSON, read here on its own)
// beside the run's memory events (events.jsonl, read here on its own).
#include "ui/plan/estimate_view.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include "app/control/control_client.h"
#include "app/monitor/run_monitor.h"
#include "app/plan/plan_runner.h"
#include "plan_test_util.h"
#include "ui/monitor/monitor_page.h"
#include "ui/plots/memory_view.h"
#include "ui_plan_test_util.h"

using namespace fs;
using namespace fs::ui;

namespace {

constexpr int kWaitMs = 120000;

// The last `memory` event of <runDir>/events.jsonl.
QJsonObject lastMemoryEvent(const QString& runDir) {
  QFile file(QDir(runDir).filePath("events.jsonl"));
  if (!file.open(QIODevice::ReadOnly)) return {};
  QJsonObject last;
  for (const QByteArray& line : file.readAll().split('\n')) {
    const QJsonObject e = QJsonDocument::fromJson(line).object();
    if (e["type"].toString() == QLatin1String("memory")) last = e;
  }
  return last;
}

qint64 cellBytes(const QTableWidget* table, int row, int column) {
  return table->item(row, column)->data(Qt::UserRole).toLongLong();
}

}  // namespace

class EstimateViewTest : public QObject {
  Q_OBJECT
 private slots:
  void showsThePlanBesideTheMeasurement() {
    QTemporaryDir work;
    const QString runDir = work.filePath("run");
    QProcess train;
    train.setWorkingDirectory(work.path());
    train.setProcessChannelMode(QProcess::MergedChannels);
    train.start(QStringLiteral(FS_TEST_FLAMINGO_TRAIN),
                {"train", "--config", app::test::tinyPresetFile(), "--run-dir", runDir, "--set",
                 "parallel.mode=fsdp", "--set", "optim.epochs=1", "--set", "optim.warmup_steps=0", "--set",
                 "data.datasets.laion.samples_per_epoch=8", "--set", "data.datasets.mmc4.samples_per_epoch=4",
                 "--set", "telemetry.memory_every_steps=1"});
    QVERIFY(train.waitForFinished(kWaitMs));
    QVERIFY2(train.exitCode() == 0, train.readAll().constData());
    const QJsonObject memory = lastMemoryEvent(runDir);
    QVERIFY2(!memory.isEmpty(), "the run wrote no memory event");
    const QJsonObject rank0 = memory["ranks"].toArray()[0].toObject();

    app::RunMonitor monitor;
    app::ControlClient control;
    MonitorPage page(&monitor, &control);
    EstimateView* view = page.estimateView();
    QCOMPARE(page.tabs()->indexOf(view), page.tabs()->indexOf(page.memoryView()) + 1);
    view->setEngineSearch(app::test::testEngine());
    QSignalSpy planned(view->runner(), &app::PlanRunner::planned);
    QSignalSpy delivered(&monitor, &app::RunMonitor::delivered);
    monitor.attach(runDir);
    page.runAttached(runDir);
    QVERIFY(planned.wait(kWaitMs));
    while (!view->table()->rowCount() ||
           view->table()->item(0, EstimateView::kLatest)->text() == QLatin1String("-")) {
      QVERIFY(delivered.wait(kWaitMs));
    }

    // The plan is of this run: its config.yaml, one rank, full_shard / openflamingo.
    QVERIFY(view->estimate());
    QCOMPARE(view->estimate()->strategy, QStringLiteral("full_shard"));
    QCOMPARE(view->estimate()->policy, QStringLiteral("openflamingo"));
    QVERIFY2(view->statusLabel()->text().contains("full_shard / openflamingo"),
             qPrintable(view->statusLabel()->text()));
    const QJsonObject cli = app::test::cliPlan(QDir(runDir).filePath("config.yaml"),
                                               {"--world", "1", "--nodes", "1", "--strategies", "full_shard",
                                                "--policies", "openflamingo", "--no-reference"});
    const QJsonObject estimate = cli["estimates"][0].toObject()["per_rank"].toObject();

    const QTableWidget* table = view->table();
    QCOMPARE(table->rowCount(), 6);
    QCOMPARE(table->item(0, EstimateView::kPart)->text(), QStringLiteral("parameters"));
    QCOMPARE(cellBytes(table, 0, EstimateView::kEstimate), estimate["parameters"].toInteger());
    QCOMPARE(cellBytes(table, 0, EstimateView::kLatest), rank0["params"].toInteger());
    QCOMPARE(cellBytes(table, 1, EstimateView::kEstimate), estimate["gradients"].toInteger());
    QCOMPARE(cellBytes(table, 1, EstimateView::kLatest), rank0["grads"].toInteger());
    QCOMPARE(cellBytes(table, 2, EstimateView::kLatest), rank0["optimizer"].toInteger());
    QCOMPARE(cellBytes(table, 4, EstimateView::kLatest), rank0["activations"].toInteger());
    QCOMPARE(cellBytes(table, 5, EstimateView::kEstimate), estimate["peak"].toInteger());
    // Model state is exact (docs/planner.md): the parameters agree to the byte.
    QCOMPARE(table->item(0, EstimateView::kError)->text(), QStringLiteral("+0.0 %"));
    page.resize(1200, 700);
    page.tabs()->setCurrentWidget(view);
    page.show();
    test::savePicture(&page, QStringLiteral("estimate_view.png"));

    // Another run: nothing of this one stays.
    page.runAttached(work.filePath("other"));
    QCOMPARE(table->rowCount(), 0);
    QVERIFY(!view->estimate());
  }
};

QTEST_MAIN(EstimateViewTest)
#include "estimate_view_test.moc"
