// RunMonitor (and the RunFollower under it, on its worker thread) on real run
// directories: 100 detach / re-attach cycles while a writer thread appends, rank logs,
// the run's state from its events, the stall alert on a fake clock, and the
// dead-process alert for a real child process.
#include "app/monitor/run_monitor.h"

#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <thread>

#include "app/monitor/series_names.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/protocol/wire/run_manifest.h"
#include "monitor_test_util.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;
using testing::appendText;
using testing::iota;
using testing::line;
using testing::stepBody;

constexpr std::int64_t kT0 = 1717000000000;
constexpr int kWait = 20000;  // ms; conditions, never durations, are asserted

proto::RunStartedEvent started(std::int64_t total_steps) {
  return proto::RunStartedEvent{"run-test",  "0.1.0",          2, 1, {"localhost"}, "sha256:0", total_steps,
                                total_steps, {"laion", "mmc4"}};
}

RunMonitor::Options quietOptions() {
  RunMonitor::Options o;
  o.poll_interval_ms = 5;
  o.follow_logs = false;
  o.process_check_interval_ms = 0;
  o.stall_check_interval_ms = 0;
  return o;
}

// Appends events as the engine does, each line in two write()s so readers meet
// partial lines, until stopped. Every tenth event is a memory event.
class Writer {
 public:
  explicit Writer(std::filesystem::path file) : file_(std::move(file)) {
    thread_ = std::thread([this] { run(); });
  }
  ~Writer() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::uint64_t written() const { return written_; }
  std::int64_t steps() const { return steps_; }

 private:
  void run() {
    while (!stop_) {
      const std::uint64_t seq = written_;
      std::string text;
      if (seq % 10 == 9) {
        proto::MemoryEvent m;
        m.step = steps_;
        m.ranks.push_back(
            {0, 1000 + static_cast<std::int64_t>(seq), 2000, 1, 2, 3, 4, 5, std::nullopt, std::nullopt});
        text = line(seq, m, kT0 + static_cast<std::int64_t>(seq));
      } else {
        text = line(seq, stepBody(steps_ + 1), kT0 + static_cast<std::int64_t>(seq));
      }
      const std::size_t half = text.size() / 2;
      if (!appendText(file_, text.substr(0, half))) return;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      if (!appendText(file_, text.substr(half))) return;
      if (seq % 10 != 9) ++steps_;
      ++written_;
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  }

  std::filesystem::path file_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> written_{0};
  std::atomic<std::int64_t> steps_{0};
};

}  // namespace

class RunMonitorTest : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> dir_;
  std::filesystem::path run_;

  std::filesystem::path events() const { return run_ / proto::kEventsFileName; }

 private slots:
  void init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    run_ = testing::fsPath(dir_->path());
    QVERIFY(proto::RunDir(run_).create().isOk());
  }

  void detachAndReattachHundredTimesLosesAndRepeatsNothing() {
    RunMonitor monitor(quietOptions());
    std::vector<std::uint64_t> delivered;
    std::vector<FollowIssue> issues;
    FollowPosition position;
    int detaches = 0;
    connect(&monitor, &RunMonitor::delivered, this, [&](const FollowBatchPtr& b) {
      delivered.insert(delivered.end(), b->seqs.begin(), b->seqs.end());
    });
    connect(&monitor, &RunMonitor::issue, this, [&](const FollowIssue& i) { issues.push_back(i); });
    connect(&monitor, &RunMonitor::detached, this, [&](const FollowPosition& p) {
      position = p;
      ++detaches;
    });

    Writer writer(events());
    for (int cycle = 0; cycle < 100; ++cycle) {
      monitor.attach(QString::fromStdString(run_.string()), position);
      const std::size_t before = delivered.size();
      QTRY_VERIFY_WITH_TIMEOUT(delivered.size() > before, kWait);  // the writer never stops meanwhile
      monitor.detach();
      QTRY_COMPARE_WITH_TIMEOUT(detaches, cycle + 1, kWait);
      QVERIFY(!monitor.isAttached());
    }
    writer.stop();
    monitor.attach(QString::fromStdString(run_.string()), position);
    QTRY_COMPARE_WITH_TIMEOUT(delivered.size(), static_cast<std::size_t>(writer.written()), kWait);

    QCOMPARE(delivered, iota(0, writer.written() - 1));
    for (const FollowIssue& i : issues) QFAIL(qPrintable(i.message));
    // The store holds every step, once, in order.
    const auto x = monitor.store()->x(series::loss("laion"), {XKind::kStep, {}});
    QCOMPARE(x.size(), static_cast<std::size_t>(writer.steps()));
    for (std::size_t i = 0; i < x.size(); ++i) QCOMPARE(x[i], static_cast<double>(i + 1));
    QCOMPARE(monitor.store()->y(series::memory(0, "rss")).size(),
             static_cast<std::size_t>(writer.written() / 10));
    QCOMPARE(monitor.status().events, writer.written());
  }

  void followsRankLogsAcrossReattach() {
    RunMonitor::Options o = quietOptions();
    o.follow_logs = true;
    RunMonitor monitor(o);
    QList<RankLogLine> lines;
    FollowPosition position;
    bool detached = false;
    connect(&monitor, &RunMonitor::logLines, this, [&](const QList<RankLogLine>& l) { lines += l; });
    connect(&monitor, &RunMonitor::detached, this, [&](const FollowPosition& p) {
      position = p;
      detached = true;
    });
    const auto logs = run_ / proto::kLogsDirName;
    QVERIFY(appendText(logs / proto::rankLogFileName(0), "first\r\nsecond\npart"));
    monitor.attach(QString::fromStdString(run_.string()));
    QTRY_COMPARE_WITH_TIMEOUT(lines.size(), 2, kWait);
    QCOMPARE(lines[0].text, QStringLiteral("first"));
    QCOMPARE(lines[1].text, QStringLiteral("second"));
    QVERIFY(appendText(logs / proto::rankLogFileName(0), "ial line\n"));
    QVERIFY(appendText(logs / proto::rankLogFileName(1), "rank one\n"));
    QTRY_COMPARE_WITH_TIMEOUT(lines.size(), 4, kWait);
    QCOMPARE(lines[2].rank + lines[3].rank, 1);
    QVERIFY(lines[2].text == QStringLiteral("partial line") ||
            lines[3].text == QStringLiteral("partial line"));
    monitor.detach();
    QTRY_VERIFY_WITH_TIMEOUT(detached, kWait);
    QCOMPARE(position.log_offsets.size(), std::size_t{2});
    QVERIFY(appendText(logs / proto::rankLogFileName(0), "after\n"));
    monitor.attach(QString::fromStdString(run_.string()), position);
    QTRY_COMPARE_WITH_TIMEOUT(lines.size(), 5, kWait);
    QCOMPARE(lines[4].rank, 0);
    QCOMPARE(lines[4].text, QStringLiteral("after"));
  }

  void keepsTheRunStateFromEvents() {
    std::string text = line(0, started(100), kT0);
    proto::LayoutEvent layout;
    layout.units.push_back({"lang_encoder", 1000, "float32", true, 0, {4000, 4000}, 0, 0});
    text += line(1, layout, kT0);
    text += line(2, proto::StateEvent{proto::RunState::kRunning, ""}, kT0);
    std::uint64_t seq = 3;
    for (int step = 1; step <= 10; ++step) text += line(seq++, stepBody(step), kT0 + 2000 * step);
    text += line(seq++, proto::WarningEvent{"slow_rank", "rank 1 is slow", 1}, kT0 + 20000);
    text += line(
        seq++, proto::CheckpointEvent{10, 0, "checkpoint_step10.pt", 1234, proto::CheckpointKind::kStep, 0.5},
        kT0 + 20000);
    text += line(seq++, proto::ControlAckEvent{7, "checkpoint", true, "saved", 10}, kT0 + 20000);
    for (int step : {5, 10}) {
      proto::MemoryEvent memory;
      memory.step = step;
      memory.ranks.push_back({0, 1, 1, 1, 1, 1, 1, 1, std::nullopt, std::nullopt, 2, {step, step + 1}});
      text += line(seq++, memory, kT0 + 20000);
    }
    QVERIFY(appendText(events(), text));

    RunMonitor monitor(quietOptions());
    QSignalSpy memoryReported(&monitor, &RunMonitor::memoryReported);
    QSignalSpy acks(&monitor, &RunMonitor::controlAcknowledged);
    QSignalSpy finished(&monitor, &RunMonitor::runFinished);
    QSignalSpy layoutChanged(&monitor, &RunMonitor::layoutChanged);
    std::uint64_t acked = 0;
    connect(&monitor, &RunMonitor::controlAcknowledged, this,
            [&](const proto::ControlAckEvent& a) { acked = a.control_seq; });
    monitor.attach(QString::fromStdString(run_.string()));
    QTRY_COMPARE_WITH_TIMEOUT(monitor.status().events, seq, kWait);
    const RunStatus& s = monitor.status();
    QCOMPARE(s.step, std::int64_t{10});
    QCOMPARE(s.total_steps, std::int64_t{100});
    QCOMPARE(s.samples_per_s, 12.0);
    QVERIFY(s.state == proto::RunState::kRunning);
    QVERIFY(s.eta_s.has_value());
    QCOMPARE(*s.eta_s, 180.0);  // 90 steps left at 2 s each
    QVERIFY(s.started && s.started->run_id == "run-test");
    QCOMPARE(layoutChanged.count(), 1);
    QVERIFY(monitor.layout() && monitor.layout()->units.size() == 1);
    QCOMPARE(memoryReported.count(), 1);  // both memory events came in one batch
    QVERIFY(monitor.latestMemory() && monitor.latestMemory()->step == 10);
    QCOMPARE(monitor.latestMemory()->ranks.at(0).gathered_at_peak, (std::vector<int>{10, 11}));
    QCOMPARE(monitor.warnings().size(), std::size_t{1});
    QCOMPARE(monitor.checkpoints().size(), std::size_t{1});
    QCOMPARE(acks.count(), 1);
    QCOMPARE(acked, std::uint64_t{7});

    QVERIFY(appendText(
        events(), line(seq++, proto::RunFinishedEvent{proto::FinishStatus::kOk, 10, {}, 20.0}, kT0 + 21000)));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kWait);
    QVERIFY(monitor.status().state == proto::RunState::kFinished);
  }

  // The measured memory follows the batches, and another run starts it again:
  // nothing of the first run's ranks or peaks stays.
  void measuredMemoryStartsAgainForAnotherRun() {
    auto memoryLine = [](std::uint64_t seq, std::int64_t step, std::vector<proto::RankMemory> ranks) {
      return line(seq, proto::MemoryEvent{step, std::move(ranks)}, kT0 + step);
    };
    QVERIFY(
        appendText(events(), line(0, started(100), kT0) +
                                 memoryLine(1, 1, {{0, 1, 1, 900, 0, 0, 0, 0}, {1, 1, 1, 5, 0, 0, 0, 0}}) +
                                 memoryLine(2, 2, {{0, 1, 1, 100, 0, 0, 0, 0}, {1, 1, 1, 5, 0, 0, 0, 0}})));
    RunMonitor monitor(quietOptions());
    monitor.attach(QString::fromStdString(run_.string()));
    QTRY_COMPARE_WITH_TIMEOUT(monitor.status().events, std::uint64_t{3}, kWait);
    QCOMPARE(monitor.measuredMemory().size(), std::size_t{2});
    QCOMPARE(monitor.measuredMemory()[0].latest.params, std::int64_t{100});
    QCOMPARE(monitor.measuredMemory()[0].peak.params, std::int64_t{900});

    QTemporaryDir other;
    const auto other_run = testing::fsPath(other.path());
    QVERIFY(proto::RunDir(other_run).create().isOk());
    // More ranks than the first run: more series, so nothing could tell the stores apart by size.
    QVERIFY(appendText(
        other_run / proto::kEventsFileName,
        line(0, started(100), kT0) +
            memoryLine(1, 1,
                       {{0, 1, 1, 40, 0, 0, 0, 0}, {1, 1, 1, 40, 0, 0, 0, 0}, {2, 1, 1, 40, 0, 0, 0, 0}})));
    monitor.attach(QString::fromStdString(other_run.string()));
    QTRY_COMPARE_WITH_TIMEOUT(monitor.status().events, std::uint64_t{2}, kWait);
    QCOMPARE(monitor.measuredMemory().size(), std::size_t{3});
    for (const MeasuredRank& r : monitor.measuredMemory()) {
      QCOMPARE(r.peak.params, std::int64_t{40});
      QCOMPARE(r.peakSum, std::int64_t{40});
    }
  }

  void stallIsRaisedOnceAndClearedByTheNextStep() {
    std::int64_t now = kT0;
    RunMonitor::Options o = quietOptions();
    o.clock = [&] { return now; };
    o.stall = {5, 30};
    RunMonitor monitor(o);
    QSignalSpy stalled(&monitor, &RunMonitor::stalled);
    QSignalSpy recovered(&monitor, &RunMonitor::recovered);
    bool at_end = false;
    connect(&monitor, &RunMonitor::delivered, this, [&](const FollowBatchPtr& b) { at_end = b->at_end; });

    std::string text =
        line(0, started(1000), kT0) + line(1, proto::StateEvent{proto::RunState::kRunning, ""}, kT0);
    std::uint64_t seq = 2;
    std::int64_t t = kT0;
    for (int step = 1; step <= 10; ++step)
      text += line(seq++, stepBody(step), t += 2000);  // a step every 2 s
    now = kT0 + 2000;                                  // no stall whatever part of the file a poll has seen
    QVERIFY(appendText(events(), text));
    monitor.attach(QString::fromStdString(run_.string()));
    QTRY_VERIFY_WITH_TIMEOUT(monitor.status().events == seq && at_end, kWait);

    now = t + 29000;  // below the 30 s floor (5 x 2 s is less)
    monitor.checkStall();
    QCOMPARE(stalled.count(), 0);
    now = t + 31000;
    monitor.checkStall();
    QCOMPARE(stalled.count(), 1);
    const QString why = stalled.at(0).at(0).toString();
    QVERIFY2(why.contains(QStringLiteral("no step for 31 s")) && why.contains(QStringLiteral("step 10")),
             qPrintable(why));
    QVERIFY(monitor.isStalled());
    monitor.checkStall();
    QCOMPARE(stalled.count(), 1);  // once per stall

    now = t + 40000;
    QVERIFY(appendText(events(), line(seq++, stepBody(11), t += 40000)));
    QTRY_COMPARE_WITH_TIMEOUT(recovered.count(), 1, kWait);
    QVERIFY(!monitor.isStalled());

    // Slow steps: the threshold follows 5 x the median interval (60 s here).
    text.clear();
    now = t + 60000;  // the first of them: a poll that sees only part of the write sees no stall
    for (int step = 12; step <= 40; ++step) text += line(seq++, stepBody(step), t += 60000);
    QVERIFY(appendText(events(), text));
    QTRY_COMPARE_WITH_TIMEOUT(monitor.status().step, std::int64_t{40}, kWait);
    now = t + 299000;
    monitor.checkStall();
    QCOMPARE(stalled.count(), 1);
    now = t + 301000;
    monitor.checkStall();
    QCOMPARE(stalled.count(), 2);

    // Paused: not stalled any more, and no new alert while paused.
    QVERIFY(appendText(
        events(), line(seq++, proto::StateEvent{proto::RunState::kPaused, "control 3 pause"}, t + 301000)));
    QTRY_COMPARE_WITH_TIMEOUT(recovered.count(), 2, kWait);
    now = t + 900000;
    monitor.checkStall();
    QCOMPARE(stalled.count(), 2);
  }

  void deadLocalProcessIsReported() {
    QProcess child;
    child.start(QStringLiteral("sleep"), {QStringLiteral("600")});
    QVERIFY(child.waitForStarted());
    proto::RunManifest m;
    m.run_id = "run-test";
    m.engine_version = "0.1.0";
    m.created = kT0;
    m.updated = kT0;
    m.launcher = proto::LauncherKind::kLocal;
    m.state = proto::RunState::kRunning;
    m.pid = child.processId();
    QVERIFY(proto::writeManifest(run_, m).isOk());
    QVERIFY(appendText(events(), line(0, started(10), kT0) +
                                     line(1, proto::StateEvent{proto::RunState::kRunning, ""}, kT0)));

    RunMonitor::Options o = quietOptions();
    o.process_check_interval_ms = 10;
    RunMonitor monitor(o);
    QSignalSpy died(&monitor, &RunMonitor::processDied);
    monitor.attach(QString::fromStdString(run_.string()));
    QTRY_COMPARE_WITH_TIMEOUT(monitor.status().events, std::uint64_t{2}, kWait);
    QCOMPARE(died.count(), 0);
    child.kill();
    QVERIFY(child.waitForFinished());
    QTRY_COMPARE_WITH_TIMEOUT(died.count(), 1, kWait);
    const QString why = died.at(0).at(0).toString();
    QVERIFY2(why.contains(QString::number(m.pid.value())) && why.contains(QStringLiteral("running")),
             qPrintable(why));
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::RunMonitorTest)
#include "run_monitor_test.moc"
