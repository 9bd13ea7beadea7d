// RunFollower following a run directory through a RunDirSource instead of a local
// path: HostRunDir over a remote::Host whose reads fail now and then, as a network
// does. events.jsonl, logs/rank-<r>.log and run.json; nothing lost, nothing twice,
// and a stop / start from the position in between.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <set>

#include "app/monitor/host_file_source.h"
#include "app/monitor/run_follower.h"
#include "app/monitor/run_monitor.h"
#include "app/monitor/series_names.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/protocol/wire/run_manifest.h"
#include "faulty_sources.h"
#include "monitor_test_util.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;
using testing::appendText;
using testing::iota;
using testing::line;
using testing::stepBody;

constexpr int kWait = 20000;  // ms; a hang guard, never a duration asserted

std::string steps(std::uint64_t first_seq, std::uint64_t last_seq) {
  std::string out;
  for (std::uint64_t s = first_seq; s <= last_seq; ++s)
    out += line(s, stepBody(static_cast<std::int64_t>(s) + 1));
  return out;
}

// What one follower delivered.
struct Received {
  std::vector<std::uint64_t> seqs;
  std::vector<FollowIssue> issues;
  QStringList log_lines;
  std::optional<FollowPosition> stopped_at;
  QStringList exits;

  void connectTo(RunFollower& f) {
    QObject::connect(&f, &RunFollower::batchReady, [this](const FollowBatchPtr& b) {
      seqs.insert(seqs.end(), b->seqs.begin(), b->seqs.end());
    });
    QObject::connect(&f, &RunFollower::issue, [this](const FollowIssue& i) { issues.push_back(i); });
    QObject::connect(&f, &RunFollower::logLines, [this](const QList<RankLogLine>& lines) {
      for (const auto& l : lines) log_lines << QStringLiteral("%1:%2").arg(l.rank).arg(l.text);
    });
    QObject::connect(&f, &RunFollower::stopped, [this](const FollowPosition& p) { stopped_at = p; });
    QObject::connect(&f, &RunFollower::processExited, [this](qint64, const QString& why) { exits << why; });
  }
  int count(FollowIssue::Kind kind) const {
    return static_cast<int>(
        std::count_if(issues.begin(), issues.end(), [&](const FollowIssue& i) { return i.kind == kind; }));
  }
};

}  // namespace

class RemoteFollowTest : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> dir_;
  std::filesystem::path run_;
  testing::FilesHost host_;

  FollowOptions options(const FollowPosition& from = {}) {
    FollowOptions o;
    o.source = std::make_shared<HostRunDir>(host_, run_.string());
    o.start = from;
    o.poll_interval_ms = 2;
    o.max_read_bytes = 4096;  // many reads, so that some of them fail
    o.process_check_interval_ms = 1;
    return o;
  }
  void writeManifest() {
    proto::RunManifest m;
    m.run_id = "remote-test";
    m.engine_version = "0.1.0";
    m.created = 1717000000000;
    m.updated = 1717000000000;
    m.launcher = proto::LauncherKind::kSsh;
    m.state = proto::RunState::kRunning;
    m.pid = 999999999;  // no such process here, nor anywhere this test looks
    QVERIFY(proto::writeManifest(run_, m).isOk());
  }

 private slots:
  void init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    run_ = testing::fsPath(dir_->path()) / "run";
    std::filesystem::create_directories(run_ / proto::kLogsDirName);
    host_.failEveryNthRead(0);
  }

  void followsEventsAndLogsThroughFailingReads() {
    writeManifest();
    QVERIFY(appendText(run_ / proto::kEventsFileName, steps(0, 199)));
    QVERIFY(appendText(run_ / proto::kLogsDirName / "rank-0.log", "r0 a\nr0 b\n"));
    QVERIFY(appendText(run_ / proto::kLogsDirName / "rank-1.log", "r1 a\nr1 b"));  // a torn last line
    host_.failEveryNthRead(3);

    Received got;
    {
      RunFollower follower(options());
      got.connectTo(follower);
      follower.start();
      QTRY_COMPARE_WITH_TIMEOUT(got.seqs.size(), std::size_t{200}, kWait);
      QTRY_COMPARE_WITH_TIMEOUT(got.log_lines.size(), 3, kWait);
      QVERIFY(appendText(run_ / proto::kEventsFileName, steps(200, 249)));
      QVERIFY(appendText(run_ / proto::kLogsDirName / "rank-1.log", "\n"));
      QTRY_COMPARE_WITH_TIMEOUT(got.seqs.size(), std::size_t{250}, kWait);
      QTRY_COMPARE_WITH_TIMEOUT(got.log_lines.size(), 4, kWait);
      follower.stop();
    }
    QVERIFY(host_.failedReads() > 0);
    QCOMPARE(got.seqs, iota(0, 249));
    QCOMPARE(std::set<QString>(got.log_lines.begin(), got.log_lines.end()),
             (std::set<QString>{"0:r0 a", "0:r0 b", "1:r1 a", "1:r1 b"}));
    QVERIFY(got.count(FollowIssue::Kind::kReadError) > 0);
    QCOMPARE(got.count(FollowIssue::Kind::kDuplicate), 0);
    QCOMPARE(got.count(FollowIssue::Kind::kSeqGap), 0);
    QCOMPARE(got.count(FollowIssue::Kind::kTruncated), 0);
    QCOMPARE(got.count(FollowIssue::Kind::kReplaced), 0);
    // No process check without a way to make one: the pid is not looked for here.
    QVERIFY(got.exits.isEmpty());

    // A second follower from the position continues exactly there.
    QVERIFY(got.stopped_at.has_value());
    QCOMPARE(got.stopped_at->offset, std::filesystem::file_size(run_ / proto::kEventsFileName));
    QCOMPARE(got.stopped_at->inode, std::uint64_t{0});
    QVERIFY(!got.stopped_at->head.empty());
    QVERIFY(appendText(run_ / proto::kEventsFileName, steps(250, 259)));
    QVERIFY(appendText(run_ / proto::kLogsDirName / "rank-0.log", "r0 c\n"));
    Received more;
    RunFollower follower(options(*got.stopped_at));
    more.connectTo(follower);
    follower.start();
    QTRY_COMPARE_WITH_TIMEOUT(more.seqs.size(), std::size_t{10}, kWait);
    QTRY_COMPARE_WITH_TIMEOUT(more.log_lines.size(), 1, kWait);
    QCOMPARE(more.seqs, iota(250, 259));
    QCOMPARE(more.log_lines, QStringList{"0:r0 c"});
    QCOMPARE(more.count(FollowIssue::Kind::kDuplicate), 0);
    QCOMPARE(more.count(FollowIssue::Kind::kReplaced), 0);
  }

  void processCheckThroughTheGivenProbe() {
    writeManifest();
    QVERIFY(appendText(run_ / proto::kEventsFileName, steps(0, 9)));
    FollowOptions o = options();
    int asked = 0;
    o.process_alive = [&asked](const proto::RunManifest& m) -> std::optional<bool> {
      ++asked;
      return m.run_id == "remote-test" ? std::optional<bool>(false) : std::nullopt;
    };
    Received got;
    RunFollower follower(o);
    got.connectTo(follower);
    follower.start();
    QTRY_COMPARE_WITH_TIMEOUT(got.exits.size(), 1, kWait);
    QCOMPARE(got.seqs, iota(0, 9));  // read to its end before the exit is said
    QVERIFY2(got.exits[0].contains(QStringLiteral("999999999")), qPrintable(got.exits[0]));
    QVERIFY(asked >= 1);
  }
  void idleFollowBacksOffAndLooksAtLogsLessOften() {
    // NOTE [Idle polling]: the test drives every poll itself; the timer's interval is
    // far longer than the test, so only the interval's value is looked at.
    writeManifest();
    QVERIFY(appendText(run_ / proto::kEventsFileName, steps(0, 9)));
    QVERIFY(appendText(run_ / proto::kLogsDirName / "rank-0.log", "r0 a\n"));
    QVERIFY(appendText(run_ / proto::kLogsDirName / "rank-1.log", "r1 a\n"));
    FollowOptions o = options();
    o.poll_interval_ms = 100'000;
    o.idle_poll_interval_ms = 800'000;
    o.log_poll_every = 5;
    o.log_list_every = 4;
    o.process_check_interval_ms = 0;
    Received got;
    RunFollower follower(o);
    got.connectTo(follower);
    follower.start();  // the first poll: events and logs (new events came)
    QCOMPARE(got.seqs, iota(0, 9));
    QCOMPARE(got.log_lines.size(), 2);
    QCOMPARE(follower.pollIntervalMs(), 100'000);

    const int stats0 = host_.stats(), lists0 = host_.lists();
    std::vector<int> intervals;
    for (int i = 0; i < 40; ++i) {
      follower.poll();
      intervals.push_back(follower.pollIntervalMs());
    }
    // 40 idle polls: events.jsonl looked at each time; the two rank logs at every 5th
    // poll (8 times); logs/ listed at every 4th of those (twice).
    QCOMPARE(host_.stats() - stats0, 40 + 8 * 2);
    QCOMPARE(host_.lists() - lists0, 2);
    // The interval holds for kIdlePollsBeforeBackoff polls, then doubles to the cap.
    const int k = RunFollower::kIdlePollsBeforeBackoff;
    QCOMPARE(intervals[k - 2], 100'000);
    QCOMPARE(intervals[k - 1], 200'000);
    QCOMPARE(intervals[k], 400'000);
    QCOMPARE(intervals[k + 1], 800'000);
    QCOMPARE(intervals.back(), 800'000);

    // Something new: back to the base at once, and the logs are read with the events.
    QVERIFY(appendText(run_ / proto::kEventsFileName, steps(10, 10)));
    QVERIFY(appendText(run_ / proto::kLogsDirName / "rank-1.log", "r1 b\n"));
    follower.poll();
    QCOMPARE(follower.pollIntervalMs(), 100'000);
    QCOMPARE(got.seqs, iota(0, 10));
    QCOMPARE(got.log_lines.size(), 3);
    // A rank that appears later is found at the next listing.
    QVERIFY(appendText(run_ / proto::kLogsDirName / "rank-2.log", "r2 a\n"));
    for (int i = 0; i < 5 * 4; ++i) follower.poll();
    QCOMPARE(got.log_lines.size(), 4);
    QCOMPARE(got.log_lines.back(), QStringLiteral("2:r2 a"));
    follower.stop();
    QCOMPARE(got.count(FollowIssue::Kind::kDuplicate), 0);
  }

  void nextPollInterval() {
    const int k = RunFollower::kIdlePollsBeforeBackoff;
    QCOMPARE(RunFollower::nextPollIntervalMs(50, 50, 250, k - 1, false), 50);
    QCOMPARE(RunFollower::nextPollIntervalMs(50, 50, 250, k, false), 100);
    QCOMPARE(RunFollower::nextPollIntervalMs(200, 50, 250, k + 2, false), 250);
    QCOMPARE(RunFollower::nextPollIntervalMs(250, 50, 250, k + 3, false), 250);
    QCOMPARE(RunFollower::nextPollIntervalMs(250, 50, 250, 0, true), 50);
    QCOMPARE(RunFollower::nextPollIntervalMs(50, 50, 0, 100, false), 50);  // no pacing
  }

  void runMonitorAttachesThroughASource() {
    QVERIFY(appendText(run_ / proto::kEventsFileName, steps(0, 99)));
    host_.failEveryNthRead(2);
    RunMonitor::Options o;
    o.poll_interval_ms = 2;
    o.stall_check_interval_ms = 0;
    RunMonitor monitor(o);
    monitor.attach(std::make_shared<HostRunDir>(host_, run_.string()));
    QCOMPARE(monitor.runDir(), QString::fromStdString("files:" + run_.string()));
    QTRY_COMPARE_WITH_TIMEOUT(monitor.status().events, std::uint64_t{100}, kWait);
    QCOMPARE(monitor.store()->y(series::loss("laion")).size(), std::size_t{100});
    QVERIFY(host_.failedReads() > 0);
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::RemoteFollowTest)
#include "remote_follow_test.moc"
