// The main window wired up: the tiny preset loaded into the form, the runs
// list fed by the catalog worker from the config's run_root, the title and
// status bar following the document. Writes pictures of the window to
// <build>/tests/screenshots/ for people to look at.
#include "ui/main_window.h"

#include <QDir>
#include <QLabel>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include "app/config/config_document.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/protocol/wire/run_manifest.h"
#include "ui/config/config_form.h"
#include "ui/config/field_editor.h"
#include "ui/plan/planner_view.h"
#include "ui/runs/runs_panel.h"

namespace fs::ui {
namespace {

namespace proto = fs::protocol;

void writeRun(const QString& dir, const std::string& id, std::int64_t created, proto::RunState state,
              int ranks) {
  const std::filesystem::path p(QFile::encodeName(dir).toStdString());
  QVERIFY(proto::RunDir(p).create().isOk());
  proto::RunManifest m;
  m.run_id = id;
  m.engine_version = "0.1.0";
  m.created = created;
  m.nproc_per_node = ranks;
  m.world_size = ranks;
  m.state = state;
  m.updated = created;
  QVERIFY(proto::writeManifest(p, m).isOk());
}

// Shows `window` with the tiny preset loaded into `doc` (the runs list not refreshing by itself).
void showWithTiny(MainWindow& window, app::ConfigDocument& doc) {
  window.runsPanel()->setAutoRefreshSeconds(0);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QSignalSpy loaded(&doc, &app::ConfigDocument::loaded);
  doc.loadFile(QStringLiteral(FS_SOURCE_DIR "/resources/presets/tiny.yaml"));
  QVERIFY(loaded.wait(5000));
}

void save(QWidget* w, const QString& name) {
  QTest::qWait(50);  // let posted layout requests run, as they would before a paint
  const QString dir = QStringLiteral(FS_BINARY_DIR "/tests/screenshots");
  QVERIFY(QDir().mkpath(dir));
  QVERIFY(w->grab().save(dir + QLatin1Char('/') + name));
}

}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    // run_root "runs" is relative to the working directory: give it a few runs.
    QVERIFY(work_.isValid());
    const QString runs = work_.filePath(QStringLiteral("runs"));
    writeRun(runs + QStringLiteral("/tiny-20240601"), "tiny-20240601-a1", 1'717'200'000'000,
             proto::RunState::kFinished, 1);
    writeRun(runs + QStringLiteral("/tiny-20240602"), "tiny-20240602-b2", 1'717'300'000'000,
             proto::RunState::kRunning, 2);
    QVERIFY(QDir().mkpath(runs + QStringLiteral("/half-written")));
    QFile broken(runs + QStringLiteral("/half-written/run.json"));
    QVERIFY(broken.open(QIODevice::WriteOnly));
    broken.write("{\"run_id\": ");
    broken.close();
    QVERIFY(QDir::setCurrent(work_.path()));
  }

  void showsTheTinyPresetAndItsRuns() {
    app::ConfigDocument doc;
    MainWindow window(&doc);
    showWithTiny(window, doc);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(window.windowTitle().startsWith(QStringLiteral("tiny.yaml")), qPrintable(window.windowTitle()));
    QCOMPARE(window.configForm()->editor(QStringLiteral("name"))->value().value(),
             proto::Value(std::string("tiny")));

    QCOMPARE(window.runsPanel()->root(), QDir::cleanPath(work_.filePath(QStringLiteral("runs"))));
    QTreeWidget* table = window.runsPanel()->table();
    QTRY_COMPARE_WITH_TIMEOUT(table->topLevelItemCount(), 3, 5000);
    QCOMPARE(table->topLevelItem(0)->text(0), QStringLiteral("tiny-20240602"));
    QCOMPARE(table->topLevelItem(0)->text(1), QStringLiteral("running"));
    QCOMPARE(table->topLevelItem(2)->text(1), QStringLiteral("unreadable"));

    // An edit marks the title; the status bar counts problems.
    QVERIFY(doc.setField("optim.lr", "0.002").isOk());
    QVERIFY(window.windowTitle().startsWith(QStringLiteral("tiny.yaml*")));
    QVERIFY(doc.setField("optim.lr", "0.001").isOk());

    save(&window, QStringLiteral("main_window.png"));
    window.configForm()->sectionTabs()->setCurrentIndex(1);  // model
    save(&window, QStringLiteral("main_window_model.png"));
    window.configForm()->sectionTabs()->setCurrentIndex(2);  // data
    save(&window, QStringLiteral("main_window_data.png"));
  }

  void showsProblemsBesideFields() {
    app::ConfigDocument doc;
    MainWindow window(&doc);
    showWithTiny(window, doc);
    if (QTest::currentTestFailed()) return;
    QVERIFY(doc.setField("data.datasets[1].min_num_images", "5").isOk());
    QVERIFY(doc.setField("data.datasets[1].batch_size", "0").isOk());
    QVERIFY(doc.setField("optim.warmup_steps", "100000").isOk());
    QVERIFY(doc.errorCount() >= 2);
    auto* count = window.statusBar()->findChild<QLabel*>();
    QVERIFY(count != nullptr);
    window.configForm()->focusField(QStringLiteral("data.datasets[1].batch_size"));
    save(&window, QStringLiteral("main_window_problems.png"));
    // Regression: a dataset tab bar rebuilt while hidden came back 0 px tall.
    auto* bar = window.findChild<QWidget*>(QStringLiteral("list:data.datasets"))->findChild<QTabBar*>();
    QVERIFY(bar->isVisible());
    QVERIFY(bar->height() >= bar->sizeHint().height());
  }

  // The fit's Apply sets the node count, not the nodes: an SSH config then
  // lacks hosts, and the status bar says so rather than "applied".
  void fitApplySaysWhatTheConfigNowNeeds() {
    app::ConfigDocument doc;
    MainWindow window(&doc);
    showWithTiny(window, doc);
    if (QTest::currentTestFailed()) return;
    QVERIFY(doc.setField("launch.kind", "ssh").isOk());
    QVERIFY(doc.setField("launch.hosts", "[node-a]").isOk());
    QCOMPARE(doc.errorCount(), 0);
    window.openPlanner();
    QVERIFY(window.plannerView() != nullptr);
    emit window.plannerView()->applyFit({QStringLiteral("launch.nproc_per_node=2")});
    QCOMPARE(window.statusBar()->currentMessage(), QStringLiteral("Applied the fit's choice to the config"));
    emit window.plannerView()->applyFit({QStringLiteral("launch.nnodes=2")});
    const QString message = window.statusBar()->currentMessage();
    QVERIFY2(
        message.startsWith(QStringLiteral("Applied the fit's choice to the config; the config now needs: ")),
        qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("launch.hosts: 1 host(s) listed for 2")), qPrintable(message));
    window.plannerView()->window()->close();
  }

 private:
  QTemporaryDir work_;
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::MainWindowTest)
#include "main_window_test.moc"
