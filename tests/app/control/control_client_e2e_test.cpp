// Control end to end on a real flamingo-train started by the local launcher:
// pause -> ack -> resume -> ack -> checkpoint -> ack and a checkpoint file ->
// stop -> ack, exit code 0 and a final checkpoint. The acks reach the client
// the way the live monitor will pass them: read from events.jsonl.
#include <QDir>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/control/control_client.h"
#include "app/launch/local_launcher.h"
#include "control_test_util.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;
// Each wait; Qt Test's watchdog ends a test function after 300 s in all.
constexpr int kWaitMs = 60'000;

}  // namespace

class ControlClientE2eTest : public QObject {
  Q_OBJECT

 private slots:
  void pauseResumeCheckpointStop() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    LocalLauncher launcher({{}, QStringLiteral(FS_TEST_FLAMINGO_TRAIN), {}});
    QSignalSpy started(&launcher, &Launcher::started);
    QSignalSpy finished(&launcher, &Launcher::finished);
    LaunchRequest request;
    request.config = test::tinyConfig();
    request.runRoot = tmp.filePath(QStringLiteral("runs"));
    request.overrides = {QStringLiteral("optim.epochs=100000")};  // ended by the test
    launcher.launch(request);
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, kWaitMs);
    const QString runDir = launcher.runDir();

    ControlClient client;
    client.setRunDir(runDir);
    test::EventFollower follower(runDir, &client);
    QSignalSpy acked(&client, &ControlClient::acknowledged);
    QSignalSpy timedOut(&client, &ControlClient::timedOut);
    client.setTimeoutMs(kWaitMs);  // a loaded machine must not fail the test
    QTRY_VERIFY_WITH_TIMEOUT(follower.has<proto::StepEvent>() || !finished.isEmpty(), kWaitMs);
    QVERIFY2(finished.isEmpty(), "flamingo-train ended before its first step; see its logs/launcher.log");

    // The count-th ack is for `verb`, carried out; *step is where.
    auto expectAck = [&](proto::ControlVerb verb, int count, qint64* step) {
      QTRY_COMPARE_WITH_TIMEOUT(acked.count(), count, kWaitMs);
      const auto args = acked.at(count - 1);
      QVERIFY(args.at(0).value<ControlRequest>().verb == verb);
      QVERIFY2(args.at(1).toBool(), qPrintable(args.at(2).toString()));
      *step = args.at(3).toLongLong();
    };
    qint64 pausedAt = 0, resumedAt = 0, checkpointAt = 0, stoppedAt = 0;

    client.pause();
    expectAck(proto::ControlVerb::kPause, 1, &pausedAt);
    if (QTest::currentTestFailed()) return;
    QVERIFY(client.isPaused());

    client.resume();
    expectAck(proto::ControlVerb::kResume, 2, &resumedAt);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(resumedAt, pausedAt);  // no step runs while paused
    QVERIFY(!client.isPaused());

    client.checkpoint();
    expectAck(proto::ControlVerb::kCheckpoint, 3, &checkpointAt);
    if (QTest::currentTestFailed()) return;
    QVERIFY(checkpointAt >= pausedAt);
    QTRY_VERIFY_WITH_TIMEOUT(follower.has<proto::CheckpointEvent>([&](const proto::CheckpointEvent& c) {
      return c.kind == proto::CheckpointKind::kStep && c.step == checkpointAt;
    }),
                             kWaitMs);
    const QString stepCheckpoint =
        QDir(runDir).filePath(QStringLiteral("checkpoint_step%1.pt").arg(checkpointAt));
    QVERIFY2(QFileInfo::exists(stepCheckpoint), qPrintable(stepCheckpoint));

    client.stop(/*checkpoint=*/true);
    expectAck(proto::ControlVerb::kStop, 4, &stoppedAt);
    if (QTest::currentTestFailed()) return;
    // The follower may have read the run's end in the same poll as the ack.
    QVERIFY(client.runState() == proto::RunState::kStopping ||
            client.runState() == proto::RunState::kFinished);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kWaitMs);
    QCOMPARE(finished.at(0).at(0).toInt(), 0);
    QCOMPARE(finished.at(0).at(1).value<ExitKind>(), ExitKind::kExited);
    QCOMPARE(timedOut.count(), 0);
    QVERIFY(client.pending().isEmpty());

    follower.poll();
    QVERIFY(client.runState() == proto::RunState::kFinished);
    QVERIFY(follower.has<proto::RunFinishedEvent>(
        [](const proto::RunFinishedEvent& f) { return f.status == proto::FinishStatus::kStopped; }));
    // The stop's checkpoint: after its ack, at the step it acted on, on disk.
    bool afterStop = false, stopCheckpoint = false;
    for (const auto& e : follower.events()) {
      if (const auto* a = std::get_if<proto::ControlAckEvent>(&e.body); a && a->verb == "stop")
        afterStop = true;
      const auto* c = std::get_if<proto::CheckpointEvent>(&e.body);
      if (afterStop && c && c->step == stoppedAt) {
        stopCheckpoint = QFileInfo::exists(QDir(runDir).filePath(QString::fromStdString(c->path)));
      }
    }
    QVERIFY(stopCheckpoint);
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::ControlClientE2eTest)
#include "control_client_e2e_test.moc"
