// RunMonitor on a run directory whose events hold a loss-spike rollback and per-rank
// heartbeats (rollback_run.h): the rollback is listed, the abandoned steps are kept
// apart from the curve that counts, and the heartbeat board names the rank the others
// wait on, by event time.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/monitor/run_monitor.h"
#include "app/monitor/series_names.h"
#include "rollback_run.h"

namespace fs::app {
namespace {

constexpr int kWait = 20000;  // ms; conditions, never durations, are asserted

std::vector<double> toVector(std::span<const double> s) {
  return {s.begin(), s.end()};
}

RunMonitor::Options quietOptions() {
  RunMonitor::Options o;
  o.poll_interval_ms = 5;
  o.follow_logs = false;
  o.process_check_interval_ms = 0;
  o.stall_check_interval_ms = 0;
  return o;
}

}  // namespace

class RollbackMonitorTest : public QObject {
  Q_OBJECT

 private slots:
  void rollbackAndHeartbeatsFromARecordedRun() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(testing::appendText(testing::fsPath(dir.filePath(QStringLiteral("events.jsonl"))),
                                testing::rollbackRunText()));
    RunMonitor monitor(quietOptions());
    QSignalSpy rollbacks(&monitor, &RunMonitor::rollbackAdded);
    QSignalSpy beats(&monitor, &RunMonitor::heartbeatsChanged);
    monitor.attach(dir.path());
    QTRY_COMPARE_WITH_TIMEOUT(monitor.status().events, std::uint64_t{22}, kWait);

    QCOMPARE(rollbacks.count(), 1);
    QCOMPARE(monitor.rollbacks().size(), std::size_t{1});
    QCOMPARE(monitor.rollbacks()[0].event, testing::sampleRollback());
    QCOMPARE(monitor.rollbacks()[0].t_ms, testing::kRollbackT0 + 11000);
    QCOMPARE(monitor.status().step, std::int64_t{12});

    // The curve that counts: 1..6, then the second attempt 7..12; x never goes back,
    // and the spike is not on it.
    const SeriesStore* store = monitor.store();
    const auto id = store->find(series::loss("laion"));
    QVERIFY(id != SeriesStore::kNoSeries);
    QCOMPARE(toVector(store->x(id, {XKind::kStep, {}})),
             (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
    const auto y = toVector(store->y(id));
    QVERIFY(std::find(y.begin(), y.end(), 9.8) == y.end());
    // The abandoned steps (6, 10], spike included, apart.
    QCOMPARE(store->abandonedCount(id), std::size_t{1});
    QCOMPARE(toVector(store->abandonedX(id, 0, {XKind::kStep, {}})), (std::vector<double>{7, 8, 9, 10}));
    QCOMPARE(store->abandonedY(id, 0).back(), 9.8);
    const auto t = toVector(store->x(id, {XKind::kWallTime, {}}));
    QVERIFY(std::is_sorted(t.begin(), t.end()));

    // Heartbeats: rank 1 stopped at seq 97 at t0 + 19 s, rank 0 is at 101 since t0 + 20 s.
    QVERIFY(beats.count() >= 1);
    const HeartbeatBoard& board = monitor.heartbeats();
    QCOMPARE(board.ranks().size(), std::size_t{2});
    const RankBeat& r0 = board.ranks()[0];
    const RankBeat& r1 = board.ranks()[1];
    QCOMPARE(r0.collective_seq, std::int64_t{101});
    QCOMPARE(r0.last_collective, std::string("all_gather lang_encoder.layers.1"));
    QCOMPARE(r0.behind, std::int64_t{0});
    QCOMPARE(board.stuckMs(r0), std::int64_t{1000});
    QCOMPARE(r1.collective_seq, std::int64_t{97});
    QCOMPARE(r1.behind, std::int64_t{4});
    QCOMPARE(r1.since_ms, testing::kRollbackT0 + 19000);
    QCOMPARE(board.stuckMs(r1), std::int64_t{2000});
    QCOMPARE(board.waitedOn(), (std::vector<int>{1}));
  }

  void heartbeatBoardWithoutRanksOrLagNamesNobody() {
    HeartbeatBoard board;
    protocol::HeartbeatEvent plain;
    board.update(plain, 5);
    QVERIFY(board.ranks().empty());
    board.update(testing::beat(1, 10, 10), 1000);
    board.update(testing::beat(1, 10, 10), 4000);
    QVERIFY(board.waitedOn().empty());
    QCOMPARE(board.stuckMs(board.ranks()[1]), std::int64_t{3000});  // both waited 3 s: a collective in flight
    board.clear();
    QVERIFY(board.ranks().empty());
    QCOMPARE(board.latestMs(), std::int64_t{0});
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::RollbackMonitorTest)
#include "rollback_monitor_test.moc"
