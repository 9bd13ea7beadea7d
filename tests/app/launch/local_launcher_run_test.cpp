// A real flamingo-train started by the local launcher on the tiny preset:
// it runs to run_finished with exit code 0, its output reaches the signal and
// logs/launcher.log; SIGTERM stops it gracefully with a checkpoint and SIGKILL
// ends it at once. Waits are on conditions with generous limits, never on
// timings.
#include <QDir>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/launch/local_launcher.h"
#include "launch_test_util.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;
// Each wait; Qt Test's watchdog ends a test function after 300 s in all.
constexpr int kRunTimeoutMs = 90'000;

// Small enough that the whole run is a few steps.
const QStringList kShortRun = {QStringLiteral("optim.epochs=1"), QStringLiteral("optim.warmup_steps=0"),
                               QStringLiteral("data.datasets.laion.samples_per_epoch=8"),
                               QStringLiteral("data.datasets.mmc4.samples_per_epoch=4")};
// Far longer than any test waits: ended by the test.
const QStringList kLongRun = {QStringLiteral("optim.epochs=100000")};

EngineSearch testEngine() {
  return {{}, QStringLiteral(FS_TEST_FLAMINGO_TRAIN), {}};
}

LaunchRequest request(const QString& root, const QStringList& overrides) {
  LaunchRequest r;
  r.config = test::tinyConfig();
  r.runRoot = root;
  r.overrides = overrides;
  return r;
}

QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// What the engine said, for failure messages.
QByteArray joined(const QSignalSpy& lines) {
  QStringList out;
  for (const auto& args : lines) out << args.at(0).toString();
  return out.join(QLatin1Char('\n')).toUtf8();
}

bool hasStep(const QString& runDir) {
  return !test::eventsOf<proto::StepEvent>(test::readEvents(runDir)).empty();
}

}  // namespace

class LocalLauncherRunTest : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    tmp_ = std::make_unique<QTemporaryDir>();
    QVERIFY(tmp_->isValid());
  }

  void tinyRunReachesRunFinished() {
    LocalLauncher launcher(testEngine());
    QSignalSpy ready(&launcher, &Launcher::runDirectoryReady);
    QSignalSpy started(&launcher, &Launcher::started);
    QSignalSpy lines(&launcher, &Launcher::outputLine);
    QSignalSpy finished(&launcher, &Launcher::finished);
    QSignalSpy failed(&launcher, &Launcher::failed);
    QList<LaunchState> states;
    connect(&launcher, &Launcher::stateChanged, this, [&](LaunchState s) { states << s; });

    launcher.launch(request(tmp_->filePath(QStringLiteral("runs")), kShortRun));
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, kRunTimeoutMs);
    const QString runDir = started.at(0).at(0).toString();
    const QString pid = started.at(0).at(1).toString();
    QCOMPARE(ready.count(), 1);
    QCOMPARE(ready.at(0).at(0).toString(), runDir);
    QVERIFY2(pid.toLongLong() > 0, qPrintable(pid));
    QCOMPARE(launcher.processId(), pid);
    QVERIFY(QFileInfo(runDir).fileName().startsWith(QStringLiteral("tiny-")));

    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    QCOMPARE(failed.count(), 0);
    QVERIFY2(finished.at(0).at(0).toInt() == 0, joined(lines).constData());
    QCOMPARE(finished.at(0).at(1).value<ExitKind>(), ExitKind::kExited);
    QCOMPARE(states, (QList<LaunchState>{LaunchState::kPreparing, LaunchState::kStarting,
                                         LaunchState::kRunning, LaunchState::kExited}));

    const auto events = test::readEvents(runDir);
    const auto finishedEvents = test::eventsOf<proto::RunFinishedEvent>(events);
    QCOMPARE(finishedEvents.size(), std::size_t{1});
    QVERIFY(finishedEvents[0].status == proto::FinishStatus::kOk);
    QCOMPARE(finishedEvents[0].steps, std::int64_t{2});

    // The engine says "finished: <dir>" on stdout; the log keeps it and our notes.
    bool sawFinished = false;
    for (const auto& args : lines) {
      sawFinished |= args.at(0).toString() == QStringLiteral("finished: ") + runDir &&
                     args.at(1).value<OutputChannel>() == OutputChannel::kStdout;
    }
    QVERIFY(sawFinished);
    const QString logPath = QDir(runDir).filePath(QStringLiteral("logs/launcher.log"));
    QTRY_VERIFY_WITH_TIMEOUT(readText(logPath).contains(QStringLiteral("exited with code 0")), 30000);
    const QString log = readText(logPath);
    QVERIFY2(log.contains(QStringLiteral("[launcher] started, pid ") + pid), qPrintable(log));
    QVERIFY2(log.contains(QStringLiteral("[out] finished: ") + runDir), qPrintable(log));
    QVERIFY2(
        log.contains(QStringLiteral(" train --config ") + runDir + QStringLiteral("/config.yaml --run-dir ")),
        qPrintable(log));
  }

  void sigtermStopsGracefullyWithACheckpoint() {
    LocalLauncher launcher(testEngine());
    QSignalSpy started(&launcher, &Launcher::started);
    QSignalSpy finished(&launcher, &Launcher::finished);
    QSignalSpy lines(&launcher, &Launcher::outputLine);
    launcher.launch(request(tmp_->filePath(QStringLiteral("runs")), kLongRun));
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, kRunTimeoutMs);
    const QString runDir = launcher.runDir();
    QTRY_VERIFY_WITH_TIMEOUT(hasStep(runDir) || !finished.isEmpty(), kRunTimeoutMs);
    QVERIFY2(finished.isEmpty(), joined(lines).constData());

    // One run at a time per launcher.
    QSignalSpy failed(&launcher, &Launcher::failed);
    launcher.launch(request(tmp_->filePath(QStringLiteral("runs")), kShortRun));
    QCOMPARE(failed.count(), 1);
    QVERIFY2(failed.at(0).at(0).toString().contains(runDir), qPrintable(failed.at(0).at(0).toString()));
    QCOMPARE(launcher.runDir(), runDir);

    launcher.terminate();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    QVERIFY2(finished.at(0).at(0).toInt() == 0, joined(lines).constData());
    QCOMPARE(finished.at(0).at(1).value<ExitKind>(), ExitKind::kExited);
    const auto events = test::readEvents(runDir);
    const auto end = test::eventsOf<proto::RunFinishedEvent>(events);
    QCOMPARE(end.size(), std::size_t{1});
    QVERIFY(end[0].status == proto::FinishStatus::kStopped);
    const auto checkpoints = test::eventsOf<proto::CheckpointEvent>(events);
    QVERIFY(!checkpoints.empty());
    QVERIFY(QFileInfo::exists(QDir(runDir).filePath(QString::fromStdString(checkpoints.back().path))));
  }

  void killEndsAtOnceAndSaysHow() {
    LocalLauncher launcher(testEngine());
    QSignalSpy started(&launcher, &Launcher::started);
    QSignalSpy finished(&launcher, &Launcher::finished);
    QSignalSpy lines(&launcher, &Launcher::outputLine);
    launcher.launch(request(tmp_->filePath(QStringLiteral("runs")), kLongRun));
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, kRunTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(hasStep(launcher.runDir()) || !finished.isEmpty(), kRunTimeoutMs);
    QVERIFY2(finished.isEmpty(), joined(lines).constData());
    launcher.kill();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    QCOMPARE(finished.at(0).at(1).value<ExitKind>(), ExitKind::kCrashed);
    QCOMPARE(finished.at(0).at(0).toInt(), 9);  // SIGKILL
    QCOMPARE(describeExit(9, ExitKind::kCrashed), QStringLiteral("killed by signal 9 (Killed)"));
    QVERIFY(test::eventsOf<proto::RunFinishedEvent>(test::readEvents(launcher.runDir())).empty());
    QCOMPARE(launcher.state(), LaunchState::kExited);
  }

  // launch.nproc_per_node = 2 in the form: the node agent starts two ranks,
  // rank 0's events carry both ranks' losses and memory, and SIGTERM from
  // the launcher stops both after a checkpoint.
  void twoRanksRunThroughTheNodeAgent() {
    LocalLauncher launcher(testEngine());
    QSignalSpy started(&launcher, &Launcher::started);
    QSignalSpy finished(&launcher, &Launcher::finished);
    QSignalSpy lines(&launcher, &Launcher::outputLine);
    launcher.launch(request(tmp_->filePath(QStringLiteral("runs")),
                            kLongRun + QStringList{QStringLiteral("launch.nproc_per_node=2"),
                                                   QStringLiteral("launch.threads_per_rank=1")}));
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, kRunTimeoutMs);
    const QString runDir = launcher.runDir();
    QTRY_VERIFY_WITH_TIMEOUT(
        test::eventsOf<proto::StepEvent>(test::readEvents(runDir)).size() >= 2 || !finished.isEmpty(),
        kRunTimeoutMs);
    QVERIFY2(finished.isEmpty(), joined(lines).constData());
    launcher.terminate();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    QVERIFY2(finished.at(0).at(0).toInt() == 0, joined(lines).constData());
    const auto events = test::readEvents(runDir);
    const auto begun = test::eventsOf<proto::RunStartedEvent>(events);
    QCOMPARE(begun.size(), std::size_t{1});
    QCOMPARE(begun[0].world_size, 2);
    const auto steps = test::eventsOf<proto::StepEvent>(events);
    QVERIFY(!steps.empty());
    QCOMPARE(steps.back().rank_loss.at("laion").size(), std::size_t{2});
    const auto memory = test::eventsOf<proto::MemoryEvent>(events);
    QVERIFY(!memory.empty());
    QCOMPARE(memory.back().ranks.size(), std::size_t{2});
    const auto end = test::eventsOf<proto::RunFinishedEvent>(events);
    QCOMPARE(end.size(), std::size_t{1});
    QVERIFY(end[0].status == proto::FinishStatus::kStopped);
    QVERIFY(!QDir(runDir).entryList({QStringLiteral("agent-*.jsonl")}, QDir::Files).isEmpty());
    QVERIFY(QFileInfo::exists(QDir(runDir).filePath(QStringLiteral("logs/rank-1.log"))));
  }

 private:
  std::unique_ptr<QTemporaryDir> tmp_;
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::LocalLauncherRunTest)
#include "local_launcher_run_test.moc"
