// The planner's "Fit to cluster" on the real flamingo-train: the button opens
// the dialog, Fit runs `plan --fit --json` off the GUI thread (the runner is
// busy when the click returns), the table equals the CLI's own JSON (ranked,
// then the misfits with what they exceed), Apply writes the chosen row into
// the config being edited, nothing fitting and a bad figure show the engine's
// words.
#include "ui/plan/fit_dialog.h"

#include <QComboBox>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include "app/config/config_document.h"
#include "app/launch/local_launcher.h"
#include "app/plan/plan_runner.h"
#include "plan_test_util.h"
#include "ui/config/config_form.h"
#include "ui/main_window.h"
#include "ui/plan/planner_view.h"
#include "ui_plan_test_util.h"

using namespace fs;
using namespace fs::ui;
using app::PlanRunner;

namespace {

constexpr int kWaitMs = 120000;

QJsonObject cliFit(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(FS_TEST_FLAMINGO_TRAIN),
          QStringList{QStringLiteral("plan"), QStringLiteral("--config"), app::test::tinyPresetFile(),
                      QStringLiteral("--fit"), QStringLiteral("--json")} +
              args);
  if (!p.waitForFinished(kWaitMs)) qFatal("flamingo-train plan --fit did not finish");
  return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
}

// Clicks Fit and waits for the answer; the runner must be busy when the click returns.
bool fitIn(FitDialog* dialog, QSignalSpy* done) {
  done->clear();
  QTest::mouseClick(dialog->fitButton(), Qt::LeftButton);
  if (!dialog->runner()->isRunning()) return false;
  return done->wait(kWaitMs);
}

}  // namespace

class FitDialogTest : public QObject {
  Q_OBJECT
 private slots:
  void fitTableApplyAndRefusal() {
    QStandardPaths::setTestModeEnabled(true);
    QTemporaryDir work;
    QVERIFY(QDir::setCurrent(work.path()));
    app::ConfigDocument doc;
    doc.setConfig(app::test::tinyPreset());
    MainWindow window(&doc);
    window.launcher()->setEngineSearch(app::test::testEngine());
    QTest::mouseClick(window.configForm()->planButton(), Qt::LeftButton);
    PlannerView* view = window.plannerView();
    QVERIFY(view);
    QVERIFY(!view->fitDialog());
    QTest::mouseClick(view->fitButton(), Qt::LeftButton);
    FitDialog* dialog = view->fitDialog();
    QVERIFY(dialog);
    QVERIFY(dialog->isVisible());

    dialog->gpuBox()->setCurrentText(QStringLiteral("A100-SXM-40GB"));
    dialog->figure(QStringLiteral("gpus-per-node"))->setText(QStringLiteral("2"));
    QSignalSpy fitted(dialog->runner(), &PlanRunner::fitted);
    QVERIFY(fitIn(dialog, &fitted));

    // The table is the CLI's JSON: ranked rows, then misfits.
    const QJsonObject cli = cliFit({"--gpu", "A100-SXM-40GB", "--gpus-per-node", "2"});
    const QJsonArray ranked = cli["ranked"].toArray();
    const QJsonArray misfits = cli["misfits"].toArray();
    QVERIFY(!ranked.isEmpty());
    QTableWidget* table = dialog->table();
    QCOMPARE(table->rowCount(), int(ranked.size() + misfits.size()));
    for (int row = 0; row < ranked.size(); ++row) {
      QCOMPARE(table->item(row, 0)->text(), QString::number(row + 1));
      QCOMPARE(table->item(row, 5)->text(), ranked[row].toObject()["reason"].toString());
    }
    QVERIFY(dialog->applyButton()->isEnabled());
    test::savePicture(dialog, QStringLiteral("planner_fit.png"));

    // Apply the second choice: its values land in the config being edited.
    const QJsonObject second = ranked[ranked.size() > 1 ? 1 : 0].toObject();
    table->selectRow(ranked.size() > 1 ? 1 : 0);
    QTest::mouseClick(dialog->applyButton(), Qt::LeftButton);
    const auto& c = doc.config();
    QCOMPARE(c.launch.nproc_per_node, 2);
    QCOMPARE(QString::fromStdString(c.optim.precision), second["precision"].toString());
    QCOMPARE(c.optim.grad_accum_steps, second["grad_accum_steps"].toInteger());
    QCOMPARE(c.model.gradient_checkpointing, second["gradient_checkpointing"].toBool());
    QCOMPARE(c.parallel.cpu_offload, second["cpu_offload"].toBool());
    QCOMPARE(c.data.datasets[0].batch_size, second["micro_batch"].toArray()[0].toInteger());
    const bool replicated = second["strategy"] == "ddp" || second["strategy"] == "single";
    QCOMPARE(QString::fromStdString(c.parallel.mode),
             replicated ? QStringLiteral("ddp") : QStringLiteral("fsdp"));
    if (!replicated)
      QCOMPARE(QString::fromStdString(c.parallel.sharding_strategy), second["strategy"].toString());

    // Nothing fits: every row a misfit saying what it exceeds, the engine's refusal, no Apply.
    dialog->figure(QStringLiteral("memory-gib"))->setText(QStringLiteral("0.0001"));
    QVERIFY(fitIn(dialog, &fitted));
    QVERIFY(dialog->result().ranked.isEmpty());
    QVERIFY(table->rowCount() > 0);
    QCOMPARE(table->item(0, 0)->text(), QStringLiteral("does not fit"));
    QVERIFY2(table->item(0, 5)->text().contains(QStringLiteral("memory per GPU: needs")),
             qPrintable(table->item(0, 5)->text()));
    QVERIFY2(dialog->statusLabel()->text().contains(QStringLiteral("nothing fits")),
             qPrintable(dialog->statusLabel()->text()));
    QVERIFY(!dialog->applyButton()->isEnabled());

    // A bad figure: the engine's message names it and its value.
    dialog->figure(QStringLiteral("memory-gib"))->clear();
    dialog->figure(QStringLiteral("nodes"))->setText(QStringLiteral("0"));
    QSignalSpy failed(dialog->runner(), &PlanRunner::failed);
    QVERIFY(fitIn(dialog, &failed));
    QVERIFY(dialog->errorLabel()->isVisible());
    QVERIFY2(dialog->errorLabel()->text().contains(QStringLiteral("nodes: 0 must be at least 1")),
             qPrintable(dialog->errorLabel()->text()));
  }
};

QTEST_MAIN(FitDialogTest)
#include "fit_dialog_test.moc"
