// Estimate vs measured on real runs: a tiny training of a few steps by the
// real flamingo-train (FSDP; and plain, parallel.mode ddp, on one rank and on
// two: issue 25 item 9), followed by a MonitorPage; its Estimate tab shows
// the planner's figures for that run (the CLI's JSON, read here on its own)
// beside the run's memory events (events.jsonl, read here on its own).
#include "ui/plan/estimate_view.h"

#include <QCoreApplication>
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
#include <algorithm>
#include <memory>
#include <vector>

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

std::vector<QJsonObject> memoryEvents(const QString& runDir) {
  QFile file(QDir(runDir).filePath("events.jsonl"));
  std::vector<QJsonObject> out;
  if (!file.open(QIODevice::ReadOnly)) return out;
  for (const QByteArray& line : file.readAll().split('\n')) {
    const QJsonObject e = QJsonDocument::fromJson(line).object();
    if (e["type"].toString() == QLatin1String("memory")) out.push_back(e);
  }
  return out;
}

qint64 cellBytes(const QTableWidget* table, int row, int column) {
  return table->item(row, column)->data(Qt::UserRole).toLongLong();
}

// The tiny preset for one epoch of a few steps, a memory event every step.
QStringList tinyRunArguments(const QString& runDir, const QStringList& sets) {
  QStringList args = {"train", "--config", app::test::tinyPresetFile(), "--run-dir", runDir};
  for (const QString& set :
       QStringList{"optim.epochs=1", "optim.warmup_steps=0", "data.datasets.laion.samples_per_epoch=48",
                   "data.datasets.mmc4.samples_per_epoch=24", "telemetry.memory_every_steps=1"} +
           sets)
    args << "--set" << set;
  return args;
}

// Runs `world` ranks of flamingo-train on loopback (torchrun's variables, gloo) and waits for them.
bool trainRanks(const QString& workDir, const QStringList& args, int world, QByteArray* output) {
  std::vector<std::unique_ptr<QProcess>> ranks;
  const int port = 29500 + static_cast<int>(QCoreApplication::applicationPid() % 5000);
  for (int r = 0; r < world; ++r) {
    auto train = std::make_unique<QProcess>();
    train->setWorkingDirectory(workDir);
    train->setProcessChannelMode(QProcess::MergedChannels);
    if (world > 1) {
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert("RANK", QString::number(r));
      env.insert("WORLD_SIZE", QString::number(world));
      env.insert("LOCAL_RANK", QString::number(r));
      env.insert("LOCAL_WORLD_SIZE", QString::number(world));
      env.insert("MASTER_ADDR", "127.0.0.1");
      env.insert("MASTER_PORT", QString::number(port));
      train->setProcessEnvironment(env);
    }
    train->start(QStringLiteral(FS_TEST_FLAMINGO_TRAIN), args);
    ranks.push_back(std::move(train));
  }
  bool ok = true;
  for (auto& train : ranks) {
    ok = train->waitForFinished(kWaitMs) && train->exitStatus() == QProcess::NormalExit &&
         train->exitCode() == 0 && ok;
    *output += train->readAll();
  }
  return ok;
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
    train.start(QStringLiteral(FS_TEST_FLAMINGO_TRAIN), tinyRunArguments(runDir, {"parallel.mode=fsdp"}));
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
    // The peak row measures the events' step_peak; the planner's contract: within 10 %, never more than 5 %
    // under (the epoch is long enough for the data workers to fill their queues: NOTE [Loader memory]).
    QCOMPARE(table->item(5, EstimateView::kPart)->text(), QStringLiteral("peak (step)"));
    QCOMPARE(cellBytes(table, 5, EstimateView::kLatest), rank0["step_peak"].toInteger());
    const double fsdpPeakError = table->item(5, EstimateView::kError)->data(Qt::UserRole).toDouble();
    qInfo("FSDP peak: estimate %lld, measured %lld, %s", cellBytes(table, 5, EstimateView::kEstimate),
          cellBytes(table, 5, EstimateView::kPeak), qPrintable(table->item(5, EstimateView::kError)->text()));
    QVERIFY2(fsdpPeakError <= 10.0 && fsdpPeakError >= -5.0,
             qPrintable(table->item(5, EstimateView::kError)->text()));
    page.resize(1200, 700);
    page.tabs()->setCurrentWidget(view);
    page.show();
    test::savePicture(&page, QStringLiteral("estimate_view.png"));

    // Another run: nothing of this one stays.
    page.runAttached(work.filePath("other"));
    QCOMPARE(table->rowCount(), 0);
    QVERIFY(!view->estimate());
  }

  // Issue 25 item 9: a plain run (parallel.mode ddp, the preset's) used to read "parameters: measured 0 B;
  // gradients -49.9 %; peak +24.8 %" against no_shard. Planned as what it runs (single on one rank, ddp on
  // two), its model state agrees to the byte and the peak within the planner's 10 %.
  void aPlainRunIsPlannedAsWhatItRuns_data() {
    QTest::addColumn<int>("world");
    QTest::addColumn<QString>("strategy");
    QTest::newRow("one process") << 1 << QStringLiteral("single");
    QTest::newRow("ddp on two ranks") << 2 << QStringLiteral("ddp");
  }
  void aPlainRunIsPlannedAsWhatItRuns() {
    QFETCH(int, world);
    QFETCH(QString, strategy);
    QTemporaryDir work;
    const QString runDir = work.filePath("run");
    QByteArray output;
    QVERIFY2(
        trainRanks(work.path(), tinyRunArguments(runDir, {"launch.nproc_per_node=" + QString::number(world)}),
                   world, &output),
        output.constData());
    const QJsonObject memory = lastMemoryEvent(runDir);
    QVERIFY2(!memory.isEmpty(), "the run wrote no memory event");
    QCOMPARE(memory["ranks"].toArray().size(), world);
    const QJsonObject rank0 = memory["ranks"].toArray()[0].toObject();

    app::RunMonitor monitor;
    app::ControlClient control;
    MonitorPage page(&monitor, &control);
    EstimateView* view = page.estimateView();
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
    QVERIFY(view->estimate());
    QCOMPARE(view->estimate()->strategy, strategy);
    QCOMPARE(view->estimate()->shardGroupSize, 1);
    const QJsonObject cli =
        app::test::cliPlan(QDir(runDir).filePath("config.yaml"),
                           {"--world", QString::number(world), "--nodes", "1", "--strategies", strategy,
                            "--policies", view->estimate()->policy, "--no-reference"});
    const QJsonObject estimate = cli["estimates"][0].toObject()["per_rank"].toObject();

    // What the run holds, measured: the whole model, its gradients (and DDP's buckets), AdamW, activations.
    const QTableWidget* table = view->table();
    QCOMPARE(table->rowCount(), 6);
    for (const char* part : {"params", "grads", "optimizer", "activations"})
      QVERIFY2(rank0[part].toInteger() > 0, part);
    QCOMPARE(rank0["gathered"].toInteger(), 0);
    QCOMPARE(cellBytes(table, 0, EstimateView::kLatest), rank0["params"].toInteger());
    QCOMPARE(cellBytes(table, 1, EstimateView::kLatest), rank0["grads"].toInteger());
    QCOMPARE(cellBytes(table, 2, EstimateView::kLatest), rank0["optimizer"].toInteger());
    QCOMPARE(cellBytes(table, 5, EstimateView::kEstimate), estimate["peak"].toInteger());
    // Model state is exact: parameters, gradients and optimizer state agree to the byte.
    for (int row : {0, 1, 2}) {
      QCOMPARE(cellBytes(table, row, EstimateView::kEstimate), cellBytes(table, row, EstimateView::kPeak));
      QCOMPARE(table->item(row, EstimateView::kError)->text(), QStringLiteral("+0.0 %"));
    }
    QCOMPARE(cellBytes(table, 1, EstimateView::kEstimate), (world > 1 ? 2 : 1) * 29380 * 4);
    // The peak row measures the events' step_peak (schema 1.3, NOTE [The peak row's measured side]): the
    // largest over the ranks and steps, the first step (the set-up's interval) left without one.
    qint64 stepPeak = 0;
    int withStepPeak = 0;
    for (const QJsonObject& e : memoryEvents(runDir)) {
      for (const auto& r : e["ranks"].toArray()) {
        if (!r.toObject().contains("step_peak")) {
          QCOMPARE(e["step"].toInteger(), 1);
          continue;
        }
        ++withStepPeak;
        stepPeak = std::max<qint64>(stepPeak, r.toObject()["step_peak"].toInteger());
      }
    }
    QVERIFY2(withStepPeak >= world, "no memory event carries step_peak");
    QCOMPARE(table->item(5, EstimateView::kPart)->text(), QStringLiteral("peak (step)"));
    QVERIFY(table->item(5, EstimateView::kPart)->toolTip().contains("step_peak"));
    QCOMPARE(cellBytes(table, 5, EstimateView::kPeak), stepPeak);
    // The planner's accuracy contract (docs/planner.md, "Accuracy of the peak"): within 10 %, never
    // more than 5 % under.
    const double peakError = table->item(5, EstimateView::kError)->data(Qt::UserRole).toDouble();
    for (int row = 0; row < table->rowCount(); ++row) {
      qInfo("%s: estimate %lld, measured %lld, %s", qPrintable(table->item(row, EstimateView::kPart)->text()),
            cellBytes(table, row, EstimateView::kEstimate), cellBytes(table, row, EstimateView::kPeak),
            qPrintable(table->item(row, EstimateView::kError)->text()));
    }
    QVERIFY2(peakError <= 10.0 && peakError >= -5.0,
             qPrintable(table->item(5, EstimateView::kError)->text()));
    page.runAttached(work.filePath("other"));
  }
};

QTEST_MAIN(EstimateViewTest)
#include "estimate_view_test.moc"
