// The run's attempts: attemptLine's wording, and RunMonitor taking run.json's attempts
// with each run_started (a node agent's restart: the same events.jsonl goes on).
#include "app/monitor/run_attempts.h"

#include <QTemporaryDir>
#include <QtTest>

#include "app/monitor/run_monitor.h"
#include "backend/protocol/wire/run_dir.h"
#include "monitor_test_util.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;
using testing::appendText;
using testing::line;
using testing::stepBody;

constexpr int kWait = 20000;  // ms; conditions, never durations, are asserted

proto::RunAttempt restartOf(int attempt, int restart, int max, std::string reason) {
  proto::RunAttempt a;
  a.attempt = attempt;
  a.started = 1717000000000 + attempt;
  a.reason = std::move(reason);
  a.restart = restart;
  a.max_restarts = max;
  return a;
}

proto::RunStartedEvent started() {
  return proto::RunStartedEvent{"run-test", "0.1.0", 2, 1, {"localhost"}, "sha256:0", 10, 10, {"laion"}};
}

}  // namespace

class RunAttemptsTest : public QObject {
  Q_OBJECT

 private slots:
  void saysTheAttemptAndWhy() {
    QCOMPARE(attemptLine({}), QString());
    QCOMPARE(attemptLine({restartOf(0, 0, 2, "start")}), QString());
    const std::string why = "rank 1 (pid 4321) was killed by SIGKILL";
    QCOMPARE(attemptLine({restartOf(0, 0, 2, "start"), restartOf(1, 1, 2, why)}),
             QStringLiteral("attempt 2 of 3 — restarted after: ") + QString::fromStdString(why));
    // Resumed by hand (no agent restart), then restarted by the new agent: its own count.
    proto::RunAttempt resumed;
    resumed.attempt = 1;
    resumed.reason = "resumed";
    QCOMPARE(attemptLine({restartOf(0, 0, 1, "start"), resumed}), QStringLiteral("attempt 2 — resumed"));
    QCOMPARE(
        attemptLine({restartOf(0, 0, 1, "start"), restartOf(1, 0, 1, "resumed"), restartOf(2, 1, 1, why)}),
        QStringLiteral("attempt 3 of 3 — restarted after: ") + QString::fromStdString(why));
  }

  void theMonitorTakesTheAttemptsWithEachRunStarted() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto run = testing::fsPath(dir.path());
    QVERIFY(proto::RunDir(run).create().isOk());
    proto::RunManifest m;
    m.run_id = "run-test";
    m.attempts = {restartOf(0, 0, 1, "start")};
    QVERIFY(proto::writeManifest(run, m).isOk());
    const auto events = run / proto::kEventsFileName;
    QVERIFY(appendText(events, line(0, started()) + line(1, stepBody(1)) + line(2, stepBody(2))));

    RunMonitor::Options o;
    o.poll_interval_ms = 5;
    o.follow_logs = false;
    o.process_check_interval_ms = 0;
    o.stall_check_interval_ms = 0;
    RunMonitor monitor(o);
    monitor.attach(QString::fromStdString(run.string()));
    QTRY_COMPARE_WITH_TIMEOUT(monitor.status().events, std::uint64_t{3}, kWait);
    QCOMPARE(monitor.status().attempts.size(), std::size_t{1});

    // The agent restarts the ranks: rank 0 records attempt 1, then its events go on.
    const std::string why = "rank 1 (pid 4321) was killed by SIGKILL";
    m.attempts.push_back(restartOf(1, 1, 1, why));
    QVERIFY(proto::writeManifest(run, m).isOk());
    QVERIFY(appendText(events, line(3, started()) + line(4, stepBody(3))));
    QTRY_COMPARE_WITH_TIMEOUT(monitor.status().events, std::uint64_t{5}, kWait);
    QCOMPARE(monitor.status().attempts.size(), std::size_t{2});
    QCOMPARE(attemptLine(monitor.status().attempts),
             QStringLiteral("attempt 2 of 2 — restarted after: ") + QString::fromStdString(why));
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::RunAttemptsTest)
#include "run_attempts_test.moc"
