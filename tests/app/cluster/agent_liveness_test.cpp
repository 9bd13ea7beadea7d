// agentsAliveCheck and RunMonitor's dead-process alert for a run followed through a
// Host: real detached agents (`sleep 600`, started by startDetached on LocalHost) in
// a run directory with a launch.json that records them and a run.json that says
// "running". The alert comes after an agent is killed, never before; a node whose
// host cannot be opened (the open blocks, as a connect to a host that does not
// answer does) stalls neither following nor the alert from the nodes that answer.
#include "app/cluster/agent_liveness.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QtTest>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>

#include "app/launch/ssh/remote_agent.h"
#include "app/monitor/background_alive_check.h"
#include "app/monitor/host_file_source.h"
#include "app/monitor/run_monitor.h"
#include "app/remote/local_host.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/events.h"
#include "backend/protocol/wire/launch_record.h"
#include "backend/protocol/wire/run_manifest.h"

namespace fs::app::cluster {
namespace {

constexpr int kWaitMs = 20'000;  // a hang guard, never a duration asserted

}  // namespace

class AgentLivenessTest : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> tmp_;
  std::string run_;
  std::shared_ptr<remote::LocalHost> local_ = std::make_shared<remote::LocalHost>();
  std::vector<AgentIdentity> started_;

  AgentIdentity startSleeper(const std::string& name) {
    auto id = startDetached(*local_, run_, run_ + "/logs/agent-" + name + ".log", {"sleep", "600"});
    if (!id) qFatal("startDetached: %s", id.status().message().c_str());
    started_.push_back(id.value());
    return id.value();
  }
  void writeRun(std::int64_t pid) {
    protocol::RunManifest m;
    m.run_id = "liveness-" + std::to_string(::getpid());
    m.created = protocol::unixMillisNow();
    m.launcher = protocol::LauncherKind::kSsh;
    m.hosts = {"local"};
    m.state = protocol::RunState::kRunning;
    m.pid = pid;
    m.agent_pid = pid;
    QVERIFY(protocol::writeManifest(run_, m).isOk());
  }
  void writeLaunch(const std::vector<std::pair<std::string, AgentIdentity>>& nodes) {
    protocol::LaunchRecord r;
    r.launcher = protocol::LauncherKind::kSsh;
    r.run_dir = run_;
    r.created = protocol::unixMillisNow();
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      protocol::LaunchedNode n;
      n.node_rank = static_cast<int>(i);
      n.host = nodes[i].first;
      n.address = nodes[i].first;
      n.agent_pid = nodes[i].second.pid;
      n.boot_id = nodes[i].second.boot_id;
      n.start_ticks = nodes[i].second.start_ticks;
      n.started = r.created;
      r.nodes.push_back(n);
    }
    QVERIFY(local_->writeFileAtomic(run_ + "/launch.json", protocol::encodeLaunchRecord(r)).isOk());
  }
  void kill(const AgentIdentity& a) {
    auto s = signalAgent(*local_, a, "KILL");
    QVERIFY(s.isOk());
    QTRY_VERIFY_WITH_TIMEOUT(probeAgent(*local_, a).value() != AgentState::kAlive, kWaitMs);
  }
  HostOpener localOpener() {
    return [this](const std::string& name) -> protocol::StatusOr<std::shared_ptr<remote::Host>> {
      if (name == "local") return std::shared_ptr<remote::Host>(local_);
      return protocol::Status::ioError("no host " + name);
    };
  }

 private slots:
  void init() {
    tmp_ = std::make_unique<QTemporaryDir>();
    QVERIFY(tmp_->isValid());
    run_ = tmp_->path().toStdString() + "/run";
    QVERIFY(local_->makeDirs(run_ + "/logs").isOk());
  }
  void cleanup() {
    for (const auto& a : started_) (void)signalAgent(*local_, a, "KILL");
    started_.clear();
    tmp_.reset();
  }

  void unknownWithoutLaunchRecord() {
    const AgentIdentity a = startSleeper("0");
    writeRun(a.pid);
    auto alive = agentsAliveCheck(local_, run_, localOpener());
    QCOMPARE(alive({}), std::optional<bool>());
    writeLaunch({{"local", a}});  // written later: read then
    QCOMPARE(alive({}), std::optional<bool>(true));
  }

  void aliveWhileAnyAgentIs() {
    const AgentIdentity a = startSleeper("0");
    const AgentIdentity b = startSleeper("1");
    writeLaunch({{"local", a}, {"local", b}});
    auto alive = agentsAliveCheck(local_, run_, localOpener());
    QCOMPARE(alive({}), std::optional<bool>(true));
    kill(a);
    QCOMPARE(alive({}), std::optional<bool>(true));
    kill(b);
    QCOMPARE(alive({}), std::optional<bool>(false));
  }

  void reusedIdentityCountsAsGone() {
    AgentIdentity a = startSleeper("0");
    a.start_ticks += 1;  // the pid runs, but it is not the recorded process
    writeLaunch({{"local", a}});
    QCOMPARE(agentsAliveCheck(local_, run_, localOpener())({}), std::optional<bool>(false));
  }

  void unknownWhenAHostCannotBeOpened() {
    const AgentIdentity a = startSleeper("0");
    writeLaunch({{"local", a}, {"gpu-node-unreachable", a}});
    auto alive = agentsAliveCheck(local_, run_, localOpener());
    QCOMPARE(alive({}), std::optional<bool>(true));  // node 0 alive is enough
    kill(a);
    QCOMPARE(alive({}), std::optional<bool>());  // node 1 unknown: cannot tell
  }

  void monitorAlertsAfterTheAgentIsKilled() {
    const AgentIdentity a = startSleeper("0");
    writeRun(a.pid);
    writeLaunch({{"local", a}});
    std::atomic<int> aliveAnswers{0};
    auto check = agentsAliveCheck(local_, run_, localOpener());
    RunMonitor::Options o;
    o.poll_interval_ms = 5;
    o.process_check_interval_ms = 5;
    o.stall_check_interval_ms = 0;
    RunMonitor monitor(o);
    QSignalSpy died(&monitor, &RunMonitor::processDied);
    monitor.attach(std::make_shared<HostRunDir>(*local_, run_), [&](const protocol::RunManifest& m) {
      auto r = check(m);
      if (r == std::optional<bool>(true)) ++aliveAnswers;
      return r;
    });
    QTRY_VERIFY_WITH_TIMEOUT(aliveAnswers.load() >= 3, kWaitMs);  // checked while alive...
    QCOMPARE(died.count(), 0);                                    // ...and no alert
    kill(a);
    QTRY_COMPARE_WITH_TIMEOUT(died.count(), 1, kWaitMs);
    const QString why = died.at(0).at(0).toString();
    QVERIFY2(why.contains(QString::number(a.pid)), qPrintable(why));
    monitor.detach();
    QTRY_VERIFY_WITH_TIMEOUT(!monitor.isAttached(), kWaitMs);
  }

  // Node 1's host never answers: its open blocks until the test ends. Following goes
  // on (events written meanwhile arrive), and once node 0's agent dies the alert
  // does not come (node 1 unknown), but nothing waits for node 1 either.
  void aHostThatDoesNotAnswerStallsNothing() {
    const AgentIdentity a = startSleeper("0");
    writeRun(a.pid);
    writeLaunch({{"local", a}, {"gpu-node-unreachable", a}});
    std::promise<void> entered;
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<int> opens{0};
    HostOpener hanging =
        [&, released](const std::string& name) -> protocol::StatusOr<std::shared_ptr<remote::Host>> {
      if (name == "local") return std::shared_ptr<remote::Host>(local_);
      if (opens++ == 0) entered.set_value();
      released.wait();  // a connect that does not answer
      return protocol::Status::ioError(name + ": connection timed out");
    };
    RunMonitor::Options o;
    o.poll_interval_ms = 5;
    o.process_check_interval_ms = 5;
    o.stall_check_interval_ms = 0;
    RunMonitor monitor(o);
    QSignalSpy warnings(&monitor, &RunMonitor::warningAdded);
    QSignalSpy died(&monitor, &RunMonitor::processDied);
    monitor.attach(std::make_shared<HostRunDir>(*local_, run_),
                   aliveCheckInBackground(agentsAliveCheck(local_, run_, hanging)));
    kill(a);  // node 0 dead: the probe goes on to node 1 and hangs there
    QCOMPARE(entered.get_future().wait_for(std::chrono::milliseconds(kWaitMs)), std::future_status::ready);
    protocol::EventEncoder encoder;
    {
      std::ofstream events(run_ + "/events.jsonl", std::ios::app);
      events << encoder.encode(protocol::WarningEvent{"probe", "written while node 1 hangs", 0});
    }
    QTRY_COMPARE_WITH_TIMEOUT(warnings.count(), 1, kWaitMs);  // the follower was not held up
    QCOMPARE(died.count(), 0);                                // node 1 unknown: no verdict
    QCOMPARE(opens.load(), 1);                                // one probe at a time
    release.set_value();
    monitor.detach();
    QTRY_VERIFY_WITH_TIMEOUT(!monitor.isAttached(), kWaitMs);
    QVERIFY(QThreadPool::globalInstance()->waitForDone(kWaitMs));  // no probe left using `hanging`
  }

  // The same with RunMonitor's default settings: how long from the kill to the alert
  // (printed, never asserted: detection times in docs/reliability.md).
  void deadAgentDetectionTimeWithDefaults() {
    const AgentIdentity a = startSleeper("0");
    writeRun(a.pid);
    writeLaunch({{"local", a}});
    std::atomic<int> aliveAnswers{0};
    auto check = agentsAliveCheck(local_, run_, localOpener());
    const RunMonitor::Options defaults;
    RunMonitor monitor(defaults);
    QSignalSpy died(&monitor, &RunMonitor::processDied);
    monitor.attach(std::make_shared<HostRunDir>(*local_, run_), [&](const protocol::RunManifest& m) {
      auto r = check(m);
      if (r == std::optional<bool>(true)) ++aliveAnswers;
      return r;
    });
    QTRY_VERIFY_WITH_TIMEOUT(aliveAnswers.load() >= 1, kWaitMs);
    const auto killed = std::chrono::steady_clock::now();
    QVERIFY(signalAgent(*local_, a, "KILL").isOk());
    QTRY_COMPARE_WITH_TIMEOUT(died.count(), 1, kWaitMs);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
    const QString why = died.at(0).at(0).toString();
    QVERIFY2(why.contains(QString::number(a.pid)), qPrintable(why));
    std::printf("detection: dead agent: %.2f s (RunMonitor process_check_interval_ms %d, the default)\n",
                took, defaults.process_check_interval_ms);
    monitor.detach();
    QTRY_VERIFY_WITH_TIMEOUT(!monitor.isAttached(), kWaitMs);
  }
};

}  // namespace fs::app::cluster

QTEST_GUILESS_MAIN(fs::app::cluster::AgentLivenessTest)
#include "agent_liveness_test.moc"
