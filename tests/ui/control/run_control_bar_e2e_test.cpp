// The control buttons end to end: a real flamingo-train started by the local
// launcher, driven only by clicks on RunControlBar. Acks and state events
// reach the client from events.jsonl, as the live monitor will pass them.
// A run that cannot answer (stopped with SIGSTOP) is killed through the
// launcher once its kill command times out on an injected clock.
#include <signal.h>

#include <QDir>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/launch/local_launcher.h"
#include "tests/app/control/control_test_util.h"
#include "ui/control/run_control_bar.h"

namespace fs::ui {
namespace {

namespace proto = fs::protocol;
// Each wait; Qt Test's watchdog ends a test function after 300 s in all.
constexpr int kWaitMs = 60'000;

}  // namespace

class RunControlBarE2eTest : public QObject {
  Q_OBJECT

 private slots:
  void buttonsDriveARealRun() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    app::LocalLauncher launcher({{}, QStringLiteral(FS_TEST_FLAMINGO_TRAIN), {}});
    app::ControlClient client;
    client.setTimeoutMs(kWaitMs);  // a loaded machine must not fail the test
    RunControlBar bar(&client);
    bar.setLauncher(&launcher);
    bar.show();
    QSignalSpy finished(&launcher, &app::Launcher::finished);

    app::LaunchRequest request;
    request.config = app::test::tinyConfig();
    request.runRoot = tmp.filePath(QStringLiteral("runs"));
    request.overrides = {QStringLiteral("optim.epochs=100000")};  // ended by the clicks
    launcher.launch(request);
    QVERIFY(!bar.stopButton()->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(!launcher.runDir().isEmpty(), kWaitMs);
    QCOMPARE(client.runDir(), launcher.runDir());
    app::test::EventFollower follower(launcher.runDir(), &client);
    QTRY_VERIFY_WITH_TIMEOUT(follower.has<proto::StepEvent>() || !finished.isEmpty(), kWaitMs);
    QVERIFY2(finished.isEmpty(), "flamingo-train ended before its first step; see its logs/launcher.log");
    QVERIFY(bar.stopButton()->isEnabled());

    QTest::mouseClick(bar.pauseResumeButton(), Qt::LeftButton);
    // The run's `state: paused` event may come before the ack: wait for the ack.
    QTRY_VERIFY_WITH_TIMEOUT(bar.message().startsWith(QStringLiteral("Pause done at step ")), kWaitMs);
    QCOMPARE(bar.pauseResumeButton()->text(), QStringLiteral("Resume"));
    QVERIFY(bar.pauseResumeButton()->isEnabled());

    QTest::mouseClick(bar.pauseResumeButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(bar.message().startsWith(QStringLiteral("Resume done at step ")), kWaitMs);
    QCOMPARE(bar.pauseResumeButton()->text(), QStringLiteral("Pause"));

    QTest::mouseClick(bar.checkpointButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(bar.message().startsWith(QStringLiteral("Checkpoint done at step ")), kWaitMs);
    QTRY_VERIFY_WITH_TIMEOUT(follower.has<proto::CheckpointEvent>([](const proto::CheckpointEvent& c) {
      return c.kind == proto::CheckpointKind::kStep;
    }),
                             kWaitMs);

    QTest::mouseClick(bar.stopButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kWaitMs);
    QCOMPARE(finished.at(0).at(0).toInt(), 0);
    QTRY_VERIFY_WITH_TIMEOUT(client.pending().isEmpty(),
                             kWaitMs);  // the stop's ack, before or after the exit
    QCOMPARE(bar.message(), QStringLiteral("flamingo-train exited with code 0"));
    for (QPushButton* b :
         {bar.stopButton(), bar.pauseResumeButton(), bar.checkpointButton(), bar.killButton()}) {
      QVERIFY2(!b->isEnabled(), qPrintable(b->objectName()));
    }
    follower.poll();
    QVERIFY(follower.has<proto::RunFinishedEvent>(
        [](const proto::RunFinishedEvent& f) { return f.status == proto::FinishStatus::kStopped; }));
  }

  void unansweredKillKillsTheProcess() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    app::LocalLauncher launcher({{}, QStringLiteral(FS_TEST_FLAMINGO_TRAIN), {}});
    qint64 now = 0;
    app::ControlClient client([&now] { return now; });
    RunControlBar bar(&client);
    bar.setLauncher(&launcher);
    bar.show();
    QSignalSpy started(&launcher, &app::Launcher::started);
    QSignalSpy finished(&launcher, &app::Launcher::finished);
    QSignalSpy written(&client, &app::ControlClient::commandWritten);

    app::LaunchRequest request;
    request.config = app::test::tinyConfig();
    request.runRoot = tmp.filePath(QStringLiteral("runs"));
    request.overrides = {QStringLiteral("optim.epochs=100000")};
    launcher.launch(request);
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, kWaitMs);
    app::test::EventFollower follower(launcher.runDir(), &client);
    QTRY_VERIFY_WITH_TIMEOUT(follower.has<proto::StepEvent>() || !finished.isEmpty(), kWaitMs);
    QVERIFY2(finished.isEmpty(), "flamingo-train ended before its first step; see its logs/launcher.log");

    // Frozen: it can no longer read control files, but SIGKILL still ends it.
    QCOMPARE(::kill(static_cast<pid_t>(launcher.processId().toLongLong()), SIGSTOP), 0);
    QTest::mouseClick(bar.killButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(written.count(), 1, kWaitMs);
    QVERIFY(!bar.killButton()->isEnabled());
    now += app::ControlClient::kDefaultTimeoutMs;
    client.checkTimeouts();
    QVERIFY2(bar.message().endsWith(QStringLiteral("; killed the process instead (SIGKILL)")),
             qPrintable(bar.message()));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kWaitMs);
    QVERIFY(finished.at(0).at(1).value<app::ExitKind>() == app::ExitKind::kCrashed);
    QCOMPARE(finished.at(0).at(0).toInt(), SIGKILL);
    QCOMPARE(bar.message(), QStringLiteral("flamingo-train killed by signal 9 (Killed)"));
    QVERIFY(!bar.killButton()->isEnabled());
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::RunControlBarE2eTest)
#include "run_control_bar_e2e_test.moc"
