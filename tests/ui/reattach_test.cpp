// The window's re-attach offer: a live remote run ("local" through RemoteRunFollow,
// i.e. LocalHost) followed when the window closes is remembered in the settings
// (under a temporary XDG_CONFIG_HOME) and offered on the next start in the status bar; the
// "Re-attach" button follows it again. A finished run is not offered. The remote
// runs browser's Attach goes through the same RemoteRunFollow. A followed remote
// run goes into History (read through the follow's Host, listed as host:path), and
// opening its row re-attaches through that host; the browser's Add to History
// records a listed run without following it. History writes under a temporary
// XDG_DATA_HOME.
#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>
#include <filesystem>

#include "app/config/config_document.h"
#include "app/history/history_record.h"
#include "app/monitor/run_monitor.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/protocol/wire/run_manifest.h"
#include "monitor_test_util.h"
#include "ui/history/history_table_model.h"
#include "ui/history/history_view.h"
#include "ui/main_window.h"
#include "ui/remote/reattach_offer.h"
#include "ui/remote/remote_run_follow.h"
#include "ui/remote/remote_runs_dialog.h"

namespace fs::ui {
namespace {

namespace proto = fs::protocol;
constexpr int kWaitMs = 20'000;  // a hang guard

// A run directory whose events say `state`.
void writeRun(const QString& dir, proto::RunState state) {
  const std::filesystem::path p(QFile::encodeName(dir).toStdString());
  QVERIFY(proto::RunDir(p).create().isOk());
  proto::RunManifest m;
  m.run_id = p.filename().string();
  m.created = proto::unixMillisNow();
  m.launcher = proto::LauncherKind::kSsh;
  m.state = state;
  QVERIFY(proto::writeManifest(p, m).isOk());
  proto::StateEvent e;
  e.state = state;
  QVERIFY(app::testing::appendText(p / proto::kEventsFileName, app::testing::line(0, e)));
}

// Follows `dir` on "local" through the window's RemoteRunFollow until its state is read.
void followRemote(MainWindow& w, const QString& dir, proto::RunState state) {
  QSignalSpy attached(w.remoteRunFollow(), &RemoteRunFollow::attached);
  w.remoteRunFollow()->follow(QStringLiteral("local"), dir);
  QTRY_COMPARE_WITH_TIMEOUT(attached.count(), 1, kWaitMs);
  QTRY_VERIFY_WITH_TIMEOUT(w.monitor()->status().state == state, kWaitMs);
}

}  // namespace

class ReattachTest : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    // The settings (<XDG_CONFIG_HOME>/flamingo-studio/settings.conf) and the window's
    // History (<XDG_DATA_HOME>/flamingo-studio/history.sqlite): keep them in here.
    qputenv("XDG_CONFIG_HOME", QFile::encodeName(tmp_.filePath(QStringLiteral("config"))));
    qputenv("XDG_DATA_HOME", QFile::encodeName(tmp_.filePath(QStringLiteral("data"))));
    ReattachOffer::remember(std::nullopt);
  }

  void liveRemoteRunIsOfferedAgain() {
    const QString dir = tmp_.filePath(QStringLiteral("runs/live"));
    writeRun(dir, proto::RunState::kRunning);
    app::ConfigDocument doc;
    {
      MainWindow first(&doc);
      QVERIFY(!first.reattachOffer()->isVisibleTo(&first));  // nothing remembered yet
      first.show();
      followRemote(first, dir, proto::RunState::kRunning);
      QVERIFY(first.close());
    }
    const auto remembered = ReattachOffer::remembered();
    QVERIFY(remembered.has_value());
    QCOMPARE(remembered->host, QStringLiteral("local"));
    QCOMPARE(remembered->runDir, dir);

    MainWindow second(&doc);
    second.show();
    QVERIFY(second.reattachOffer()->isVisibleTo(&second));
    QVERIFY(!second.monitor()->isAttached());  // an offer, not an attach
    QSignalSpy attached(second.remoteRunFollow(), &RemoteRunFollow::attached);
    QTest::mouseClick(second.reattachOffer()->reattachButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(attached.count(), 1, kWaitMs);
    QCOMPARE(attached.at(0).at(0).toString(), QStringLiteral("local"));
    QCOMPARE(attached.at(0).at(1).toString(), dir);
    QVERIFY(!second.reattachOffer()->isVisibleTo(&second));
    QTRY_VERIFY_WITH_TIMEOUT(second.monitor()->status().state == proto::RunState::kRunning, kWaitMs);
  }

  void finishedRunIsForgotten() {
    ReattachOffer::remember(RemoteRunRef{QStringLiteral("local"), QStringLiteral("/old")});
    const QString dir = tmp_.filePath(QStringLiteral("runs/done"));
    writeRun(dir, proto::RunState::kFinished);
    app::ConfigDocument doc;
    {
      MainWindow first(&doc);
      first.show();
      QVERIFY(first.reattachOffer()->isVisibleTo(&first));  // "/old" offered
      followRemote(first, dir, proto::RunState::kFinished);
      QVERIFY(first.close());
    }
    QVERIFY(!ReattachOffer::remembered().has_value());
    MainWindow second(&doc);
    second.show();
    QVERIFY(!second.reattachOffer()->isVisibleTo(&second));
  }

  void dismissForgets() {
    ReattachOffer::remember(RemoteRunRef{QStringLiteral("gpu-a"), QStringLiteral("/runs/x")});
    app::ConfigDocument doc;
    MainWindow w(&doc);
    w.show();
    QVERIFY(w.reattachOffer()->isVisibleTo(&w));
    QTest::mouseClick(w.reattachOffer()->dismissButton(), Qt::LeftButton);
    QVERIFY(!w.reattachOffer()->isVisibleTo(&w));
    QVERIFY(!ReattachOffer::remembered().has_value());
  }

  void aFollowedRemoteRunIsInHistoryAndItsRowReattaches() {
    const QString dir = tmp_.filePath(QStringLiteral("runs/remote-history"));
    writeRun(dir, proto::RunState::kFinished);
    const std::filesystem::path p(QFile::encodeName(dir).toStdString());
    proto::RunStartedEvent started;
    started.run_id = "remote-history";
    started.total_steps = 3;
    started.hosts = {"node-a"};
    proto::RunFinishedEvent finished;
    finished.status = proto::FinishStatus::kOk;
    finished.steps = 3;
    QVERIFY(app::testing::appendText(p / proto::kEventsFileName,
                                     app::testing::line(1, started) + app::testing::line(2, finished)));
    app::ConfigDocument doc;
    MainWindow w(&doc);
    w.show();
    followRemote(w, dir, proto::RunState::kFinished);

    // Recorded through the follow's Host, with the host it was reached through.
    HistoryView* history = w.historyView();
    auto rowOfRun = [history] { return history->model()->rowOf(QStringLiteral("remote-history")); };
    QTRY_VERIFY_WITH_TIMEOUT(
        rowOfRun() >= 0 && history->model()->run(rowOfRun()).status == QLatin1String("finished"), kWaitMs);
    const app::RunRecord& row = history->model()->run(rowOfRun());
    QCOMPARE(row.location, QStringLiteral("local"));
    QCOMPARE(row.runDir, dir);
    QCOMPARE(row.host, QStringLiteral("node-a"));  // the node hosts, from the events
    QCOMPARE(history->model()->index(rowOfRun(), HistoryTableModel::kRunDir).data().toString(),
             QStringLiteral("local:") + dir);

    // Follow something else, then open the row: it re-attaches through its host.
    const QString other = tmp_.filePath(QStringLiteral("runs/other-local"));
    writeRun(other, proto::RunState::kRunning);
    w.followRun(other);
    QSignalSpy attached(w.remoteRunFollow(), &RemoteRunFollow::attached);
    w.tabs()->setCurrentWidget(history);
    history->table()->setCurrentIndex(history->model()->index(rowOfRun(), 0));
    QTest::keyClick(history->table(), Qt::Key_Return);
    QTRY_COMPARE_WITH_TIMEOUT(attached.count(), 1, kWaitMs);
    QCOMPARE(attached.at(0).at(0).toString(), QStringLiteral("local"));
    QCOMPARE(attached.at(0).at(1).toString(), dir);
    QTRY_VERIFY_WITH_TIMEOUT(w.monitor()->status().state == proto::RunState::kFinished, kWaitMs);
  }

  void browserAddsARunToHistory() {
    const QString root = tmp_.filePath(QStringLiteral("browsed-root"));
    const QString dir = root + QStringLiteral("/listed-run");
    writeRun(dir, proto::RunState::kFinished);
    app::ConfigDocument doc;
    MainWindow w(&doc);
    w.show();
    RemoteRunsDialog* browser = w.openRemoteRuns();
    QSignalSpy listed(browser, &RemoteRunsDialog::listed);
    browser->hostField()->setCurrentText(QStringLiteral("local"));
    browser->rootField()->setText(root);
    browser->listRuns();
    QTRY_COMPARE_WITH_TIMEOUT(listed.count(), 1, kWaitMs);
    QCOMPARE(browser->table()->topLevelItemCount(), 1);
    browser->table()->setCurrentItem(browser->table()->topLevelItem(0));
    QVERIFY(browser->addToHistoryButton()->isEnabled());
    QTest::mouseClick(browser->addToHistoryButton(), Qt::LeftButton);

    HistoryView* history = w.historyView();
    auto rowOfRun = [history] { return history->model()->rowOf(QStringLiteral("listed-run")); };
    QTRY_VERIFY_WITH_TIMEOUT(rowOfRun() >= 0, kWaitMs);
    QCOMPARE(history->model()->run(rowOfRun()).location, QStringLiteral("local"));
    QCOMPARE(history->model()->run(rowOfRun()).runDir, dir);
    QVERIFY(!w.monitor()->isAttached());  // recorded, not followed
  }

  void browserAttachFollowsThroughTheWindow() {
    const QString dir = tmp_.filePath(QStringLiteral("runs/browsed"));
    writeRun(dir, proto::RunState::kPaused);
    app::ConfigDocument doc;
    MainWindow w(&doc);
    w.show();
    RemoteRunsDialog* browser = w.openRemoteRuns();
    QVERIFY(browser != nullptr);
    QSignalSpy attached(w.remoteRunFollow(), &RemoteRunFollow::attached);
    emit browser->attachRequested(QStringLiteral("local"), dir);
    QTRY_COMPARE_WITH_TIMEOUT(attached.count(), 1, kWaitMs);
    QCOMPARE(attached.at(0).at(1).toString(), dir);
    QTRY_VERIFY_WITH_TIMEOUT(w.monitor()->status().state == proto::RunState::kPaused, kWaitMs);
    QVERIFY(w.close());
    QCOMPARE(ReattachOffer::remembered()->runDir, dir);  // paused is live
    ReattachOffer::remember(std::nullopt);
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::ReattachTest)
#include "reattach_test.moc"
