// PlannerView on the real flamingo-train: the table's rows and figures equal
// the CLI's own JSON (read here with QJsonDocument alone), the bars are the
// rank's units, device-memory warnings name the rows, the CLI's errors show,
// Cancel kills the child; the config form's button opens the view.
#include "ui/plan/planner_view.h"

#include <QApplication>
#include <QDir>
#include <QDoubleSpinBox>
#include <QJsonArray>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include "app/config/config_document.h"
#include "app/launch/local_launcher.h"
#include "app/plan/plan_runner.h"
#include "plan_test_util.h"
#include "ui/config/config_form.h"
#include "ui/main_window.h"
#include "ui/plan/plan_table_model.h"
#include "ui/plan/rank_bar_chart.h"
#include "ui_plan_test_util.h"

using namespace fs;
using namespace fs::ui;
using app::PlanRunner;

namespace {

constexpr int kWaitMs = 60000;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The tiny preset on 2 nodes x 2 ranks: the view's default world 4, nodes 2.
protocol::RunConfig tinyOnFour() {
  auto config = app::test::tinyPreset();
  config.launch.nnodes = 2;
  config.launch.nproc_per_node = 2;
  return config;
}

// Plans `config` in `view` and waits for the result.
bool planIn(PlannerView& view, const protocol::RunConfig& config) {
  QSignalSpy planned(view.runner(), &PlanRunner::planned);
  view.setConfig(config);
  view.replan();
  return planned.wait(kWaitMs);
}

qint64 bytesAt(const PlanTableModel& model, int row, int column) {
  return model.data(model.index(row, column), PlanTableModel::kBytesRole).toLongLong();
}

}  // namespace

class PlannerViewTest : public QObject {
  Q_OBJECT
 private slots:
  void tableEqualsTheCliJson() {
    PlannerView view(app::test::testEngine());
    view.show();
    QVERIFY(planIn(view, tinyOnFour()));
    QCOMPARE(view.worldBox()->value(), 4);
    QCOMPARE(view.nodesBox()->value(), 2);
    QVERIFY(!view.progress()->isVisible());
    QVERIFY(!view.errorLabel()->isVisible());

    const QJsonObject cli = app::test::cliPlan(app::test::tinyPresetFile(), {"--world", "4", "--nodes", "2"});
    const QJsonArray estimates = cli["estimates"].toArray();
    const PlanTableModel& model = *view.model();
    QCOMPARE(model.rowCount(), int(estimates.size()));
    for (int row = 0; row < model.rowCount(); ++row) {
      const QJsonObject e = estimates[row].toObject();
      const QJsonObject r = e["per_rank"].toObject();
      auto text = [&](int column) { return model.data(model.index(row, column)).toString(); };
      QCOMPARE(text(PlanTableModel::kEngine), e["engine"].toString());
      QCOMPARE(text(PlanTableModel::kPolicy), e["policy"].toString());
      QCOMPARE(text(PlanTableModel::kStrategy), e["strategy"].toString());
      QCOMPARE(text(PlanTableModel::kShardGroup), QString::number(e["shard_group_size"].toInt()));
      QCOMPARE(bytesAt(model, row, PlanTableModel::kParameters), r["parameters"].toInteger());
      QCOMPARE(bytesAt(model, row, PlanTableModel::kGradients), r["gradients"].toInteger());
      QCOMPARE(bytesAt(model, row, PlanTableModel::kOptimizer), r["optimizer"].toInteger());
      QCOMPARE(bytesAt(model, row, PlanTableModel::kGatheredPeak), r["gathered_peak"].toInteger());
      QCOMPARE(bytesAt(model, row, PlanTableModel::kActivations), r["activations"].toInteger());
      QCOMPARE(bytesAt(model, row, PlanTableModel::kActivationsWithoutCkpt),
               r["activations_without_checkpointing"].toInteger());
      QCOMPARE(bytesAt(model, row, PlanTableModel::kActivationsWithCkpt),
               r["activations_with_checkpointing"].toInteger());
      QCOMPARE(bytesAt(model, row, PlanTableModel::kPeak), r["peak"].toInteger());
      QVERIFY(text(PlanTableModel::kPeak).endsWith(QLatin1String("iB")));  // human-readable, "1.34 MiB"
    }

    // The bars of a selected row: one per rank, each part its own height, the
    // parameters the rank's units' shards.
    const int row = 2;
    view.table()->selectRow(row);
    const QJsonObject e = estimates[row].toObject();
    QCOMPARE(view.chart()->barCount(), 4);
    for (int rank = 0; rank < 4; ++rank) {
      qint64 shards = 0;
      for (const auto& unit : e["units"].toArray())
        shards += unit.toObject()["shard_bytes"].toArray()[rank].toInteger();
      QCOMPARE(qint64(view.chart()->barValue(PlanPart::kParameters, rank)), shards);
      const QJsonObject perRank = e["per_rank"].toObject();
      QCOMPARE(qint64(view.chart()->barValue(PlanPart::kGradients, rank)), perRank["gradients"].toInteger());
      QCOMPARE(qint64(view.chart()->barValue(PlanPart::kActivations, rank)),
               perRank["activations"].toInteger());
    }
    view.resize(1200, 760);
    view.deviceMemoryBox()->setValue(0.0013);  // between the rows' peaks: some marked
    test::savePicture(&view, QStringLiteral("planner_view.png"));
  }

  void deviceMemoryMarksRowsOverIt() {
    PlannerView view(app::test::testEngine());
    QVERIFY(planIn(view, tinyOnFour()));
    const auto& estimates = view.model()->plan().estimates;
    std::int64_t lo = estimates.front().perRank.peak, hi = lo;
    for (const auto& e : estimates) {
      lo = std::min(lo, e.perRank.peak);
      hi = std::max(hi, e.perRank.peak);
    }
    QVERIFY(lo < hi);

    view.deviceMemoryBox()->setValue(double(lo + hi) / 2 / kGiB);
    const std::int64_t device = view.deviceMemory();
    QVERIFY(device > lo && device < hi);
    QVERIFY(view.warningLabel()->isVisibleTo(&view));
    const QString warning = view.warningLabel()->text();
    int over = 0;
    for (int row = 0; row < int(estimates.size()); ++row) {
      const auto& e = estimates[size_t(row)];
      const bool exceeds = e.perRank.peak > device;
      QCOMPARE(view.model()->data(view.model()->index(row, 0), PlanTableModel::kOverDeviceRole).toBool(),
               exceeds);
      const QString line = e.label() + QStringLiteral(": peak ");
      QCOMPARE(warning.contains(line), exceeds);
      over += exceeds;
    }
    QVERIFY(over > 0);
    QCOMPARE(warning.count(QLatin1Char('\n')) + 1, over);
    QVERIFY(warning.contains(QLatin1String("on every rank")));

    view.deviceMemoryBox()->setValue(double(hi) * 2 / kGiB);
    QVERIFY(!view.warningLabel()->isVisibleTo(&view));
    for (int row = 0; row < view.model()->rowCount(); ++row) QVERIFY(!view.model()->overDevice(row));
  }

  void worldChangeReplans() {
    PlannerView view(app::test::testEngine());
    QVERIFY(planIn(view, tinyOnFour()));
    QSignalSpy planned(view.runner(), &PlanRunner::planned);
    view.nodesBox()->setValue(1);
    view.worldBox()->setValue(2);  // one plan after the pause, not two
    QVERIFY(planned.wait(kWaitMs));
    QCOMPARE(planned.size(), 1);
    QCOMPARE(view.model()->plan().world, 2);
    QCOMPARE(view.chart()->barCount(), 2);
    const QJsonObject cli = app::test::cliPlan(app::test::tinyPresetFile(), {"--world", "2", "--nodes", "1"});
    QCOMPARE(view.model()->rowCount(), int(cli["estimates"].toArray().size()));
    QCOMPARE(bytesAt(*view.model(), 0, PlanTableModel::kPeak),
             cli["estimates"][0].toObject()["per_rank"].toObject()["peak"].toInteger());
  }

  void aBadConfigShowsTheCliError() {
    PlannerView view(app::test::testEngine());
    view.show();
    auto config = tinyOnFour();
    config.model.lm.family = "nosuch";
    QSignalSpy failed(view.runner(), &PlanRunner::failed);
    view.setConfig(config);
    view.replan();
    QVERIFY(failed.wait(kWaitMs));
    QVERIFY(view.errorLabel()->isVisible());
    QVERIFY2(view.errorLabel()->text().contains(QLatin1String("model.lm.family: unknown LM family 'nosuch'")),
             qPrintable(view.errorLabel()->text()));
    QCOMPARE(view.model()->rowCount(), 0);
    QVERIFY(!view.progress()->isVisible());

    // A good plan clears the error.
    QVERIFY(planIn(view, tinyOnFour()));
    QVERIFY(!view.errorLabel()->isVisible());
  }

  // The engine blocked on a FIFO: Cancel is what ends it.
  void cancelKillsTheChildAndGoesBackToIdle() {
    QTemporaryDir dir;
    const app::PlanRequest blocked = app::test::blockedRequest(dir);
    QVERIFY(!blocked.configFile.isEmpty());
    PlannerView view(app::test::testEngine());
    view.show();
    QSignalSpy started(view.runner(), &PlanRunner::processStarted);
    QSignalSpy cancelled(view.runner(), &PlanRunner::cancelled);
    view.runner()->plan(blocked);
    QVERIFY(started.wait(kWaitMs));
    const qint64 pid = started[0][0].toLongLong();
    QVERIFY(view.progress()->isVisible());
    QVERIFY(view.cancelButton()->isEnabled());
    QTest::mouseClick(view.cancelButton(), Qt::LeftButton);
    QVERIFY(cancelled.wait(kWaitMs));
    QVERIFY(!app::test::processExists(pid));
    QVERIFY(!view.progress()->isVisible());
    QVERIFY(!view.cancelButton()->isEnabled());
    QVERIFY(!view.errorLabel()->isVisible());
  }

  void theConfigFormOpensThePlanner() {
    QStandardPaths::setTestModeEnabled(true);
    QTemporaryDir work;
    QVERIFY(QDir::setCurrent(work.path()));
    app::ConfigDocument doc;
    doc.setConfig(tinyOnFour());
    MainWindow window(&doc);
    window.launcher()->setEngineSearch(app::test::testEngine());
    QVERIFY(!window.plannerView());
    QTest::mouseClick(window.configForm()->planButton(), Qt::LeftButton);
    PlannerView* view = window.plannerView();
    QVERIFY(view);
    QSignalSpy planned(view->runner(), &PlanRunner::planned);
    QVERIFY(planned.wait(kWaitMs) || view->model()->rowCount() > 0);
    QCOMPARE(view->model()->plan().world, 4);
    QCOMPARE(view->model()->plan().nodes, 2);

    // An edit of the form re-plans: more ranks per node, a larger world.
    planned.clear();
    QVERIFY(doc.setField("launch.nproc_per_node", "4").isOk());
    QVERIFY(planned.wait(kWaitMs));
    QCOMPARE(view->worldBox()->value(), 8);
    QCOMPARE(view->model()->plan().world, 8);
  }
};

QTEST_MAIN(PlannerViewTest)
#include "planner_view_test.moc"
