// The whole app on a real run: the main window launches flamingo-train on the
// tiny preset, the monitor follows it live (every step lands in the series
// store), the control bar pauses, resumes and stops it (checkpoint first), and
// the history records it. Writes pictures of every monitor view during the
// live run to <build>/tests/screenshots/ for people to look at.
#include <QDir>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>
#include <fstream>
#include <sstream>

#include "app/config/config_document.h"
#include "app/history/history_worker.h"
#include "app/launch/local_launcher.h"
#include "app/monitor/run_monitor.h"
#include "backend/protocol/wire/event_codec.h"
#include "ui/control/run_control_bar.h"
#include "ui/history/history_table_model.h"
#include "ui/history/history_view.h"
#include "ui/main_window.h"
#include "ui/monitor/monitor_page.h"
#include "ui/plan/layout_map_view.h"
#include "ui/plan/layout_treemap_widget.h"
#include "ui/plots/curve_plot.h"
#include "ui/plots/memory_view.h"

namespace fs::ui {
namespace {

void save(QWidget* w, const QString& name) {
  QTest::qWait(100);  // posted layout requests and the plots' replot timer
  const QString dir = QStringLiteral(FS_BINARY_DIR "/tests/screenshots");
  QVERIFY(QDir().mkpath(dir));
  QVERIFY(w->grab().save(dir + QLatin1Char('/') + name));
}

// "layout-map" for the tab "Layout map".
QString tabFileName(const QTabWidget* tabs, int index) {
  return tabs->tabText(index).remove(QLatin1Char('&')).toLower().replace(QLatin1Char(' '), QLatin1Char('-'));
}

// Step events in the run's events.jsonl, by the protocol decoder.
int stepEventsOnDisk(const QString& runDir) {
  std::ifstream in((runDir + QStringLiteral("/events.jsonl")).toStdString(), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  protocol::EventDecoder decoder;
  int steps = 0;
  for (const auto& line : decoder.feed(text.str())) {
    if (line.kind == protocol::DecodedLine::Kind::kEvent &&
        std::holds_alternative<protocol::StepEvent>(line.event.body)) {
      ++steps;
    }
  }
  return steps;
}

}  // namespace

class LiveRunTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }  // history under ~/.qttest

  void launchFollowControlAndRecord() {
    app::ConfigDocument doc;
    MainWindow window(&doc);
    showWithPreset(window, doc, "tiny", QStringLiteral("runs"));
    if (QTest::currentTestFailed()) return;
    QVERIFY(doc.setField("optim.epochs", "500").isOk());  // long enough to be stopped by hand
    QVERIFY(doc.setField("checkpoint.every_steps", "200").isOk());

    window.launch();
    QTRY_VERIFY_WITH_TIMEOUT(!window.monitor()->runDir().isEmpty(), 30000);
    const QString runDir = window.monitor()->runDir();
    QCOMPARE(window.tabs()->currentWidget(), window.monitorPage());
    QTRY_VERIFY_WITH_TIMEOUT(window.monitor()->status().step >= 60, 120000);

    // Live pictures of every view of the monitor.
    MonitorPage* page = window.monitorPage();
    for (int i = 0; i < page->tabs()->count(); ++i) {
      page->tabs()->setCurrentIndex(i);
      save(&window, QStringLiteral("monitor_%1.png").arg(tabFileName(page->tabs(), i)));
    }
    page->tabs()->setCurrentIndex(0);
    QVERIFY(page->lossPlot()->hasCurve(QStringLiteral("loss/laion")));
    QVERIFY(page->lossPlot()->hasCurve(QStringLiteral("loss/mmc4")));

    // Pause, resume, stop through the buttons; each follows the engine's ack.
    RunControlBar* bar = page->controlBar();
    QTest::mouseClick(bar->pauseResumeButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(window.monitor()->status().state == protocol::RunState::kPaused, 60000);
    QTRY_VERIFY_WITH_TIMEOUT(bar->pauseResumeButton()->isEnabled(), 60000);
    const auto pausedAt = window.monitor()->status().step;
    save(&window, QStringLiteral("monitor_paused.png"));
    QTest::mouseClick(bar->pauseResumeButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(window.monitor()->status().step > pausedAt + 5, 60000);
    QTRY_VERIFY_WITH_TIMEOUT(bar->stopButton()->isEnabled(), 60000);
    QTest::mouseClick(bar->stopButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!window.launcher()->isActive(), 120000);
    QTRY_VERIFY_WITH_TIMEOUT(window.monitor()->status().finished.has_value(), 30000);
    QVERIFY(window.monitor()->status().finished->status == protocol::FinishStatus::kStopped);
    QVERIFY(!QDir(runDir).entryList({QStringLiteral("checkpoint_step*.pt")}, QDir::Files).isEmpty());

    // Every step the engine wrote is in the store, once.
    const auto* store = window.monitor()->store();
    const int onDisk = stepEventsOnDisk(runDir);
    QVERIFY(onDisk > 60);
    QTRY_COMPARE_WITH_TIMEOUT(static_cast<int>(store->y("loss/laion").size()), onDisk, 10000);

    // The history has it.
    window.tabs()->setCurrentWidget(window.historyView());
    QTRY_VERIFY_WITH_TIMEOUT(window.historyView()->model()->rowCount() >= 1, 30000);
    save(&window, QStringLiteral("history.png"));
    window.tabs()->setCurrentIndex(0);
    save(&window, QStringLiteral("configure.png"));
  }

  // The built-in default, as `flamingo-studio --demo --long` loads it.
  void defaultRunShowsBothRanksAndTheLiveLayout() {
    app::ConfigDocument doc;
    MainWindow window(&doc);
    showWithPreset(window, doc, "demo-long", QStringLiteral("default-runs"));
    if (QTest::currentTestFailed()) return;

    window.launch();
    QTRY_VERIFY_WITH_TIMEOUT(!window.monitor()->runDir().isEmpty(), 30000);
    QTRY_VERIFY_WITH_TIMEOUT(window.monitor()->status().step >= 150, 180000);
    MonitorPage* page = window.monitorPage();
    QTRY_COMPARE_WITH_TIMEOUT(page->memoryView()->table()->rowCount(), 2, 30000);  // one row per rank
    QVERIFY(page->lossPlot()->hasCurve(QStringLiteral("loss/laion")));
    QVERIFY(page->lossPlot()->hasCurve(QStringLiteral("loss/mmc4")));
    for (int i = 0; i < page->tabs()->count(); ++i) {
      page->tabs()->setCurrentIndex(i);
      if (page->tabs()->currentWidget() == page->layoutMap()) {
        // The live map drawn from the run's config through the planner: several units, both ranks.
        QTRY_VERIFY_WITH_TIMEOUT(page->layoutMap()->moduleTree()->topLevelItemCount() > 0, 30000);
        QTRY_COMPARE_WITH_TIMEOUT(page->layoutMap()->rankTable()->rowCount(), 2, 30000);
      }
      save(&window, QStringLiteral("default_%1.png").arg(tabFileName(page->tabs(), i)));
    }
    page->tabs()->setCurrentIndex(0);
    QTest::mouseClick(page->controlBar()->stopButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!window.launcher()->isActive(), 120000);
    QTRY_VERIFY_WITH_TIMEOUT(window.monitor()->status().finished.has_value(), 30000);
    QVERIFY(window.monitor()->status().finished->status == protocol::FinishStatus::kStopped);
  }

 private:
  // Shows `window` running our flamingo-train, with presets/<preset>.yaml loaded
  // and its runs under <work>/<runRoot>.
  void showWithPreset(MainWindow& window, app::ConfigDocument& doc, const char* preset,
                      const QString& runRoot) {
    QVERIFY(work_.isValid());
    window.launcher()->setEngineSearch(app::EngineSearch{{}, QStringLiteral(FS_TEST_FLAMINGO_TRAIN), {}});
    window.resize(1500, 950);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QSignalSpy loaded(&doc, &app::ConfigDocument::loaded);
    doc.loadFile(QStringLiteral(FS_SOURCE_DIR "/resources/presets/") + QLatin1String(preset) +
                 QStringLiteral(".yaml"));
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 20000);
    QVERIFY(doc.setField("run_root", work_.filePath(runRoot).toStdString()).isOk());
  }

  QTemporaryDir work_;
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::LiveRunTest)
#include "live_run_test.moc"
