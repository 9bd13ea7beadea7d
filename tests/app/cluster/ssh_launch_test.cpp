// SSH launches end to end: real sshd servers in network namespaces
// (tests/fixtures/ssh_hosts.h), the app's SshLauncher starting one detached node
// agent per host, the run followed over SFTP (RunFollower through HostRunDir) and
// controlled through control files written over SFTP (ControlClient with the host).
// A 2-node x 2-rank run is paused, checkpointed, resumed and stopped; its losses
// equal, bit for bit, those of the same config on two agents of this machine (the
// variables that choose BLAS and OpenMP kernels travel in launch.env: sshd does not
// pass them on, and the local agents inherit them). launch.env reaches every rank
// through sshd verbatim, and nothing in it is executed. The
// launcher and follower going away leaves the run going, and a new follower gets
// its whole history. Waits are on conditions with generous limits (hang guards).
#include "app/launch/ssh/ssh_launch.h"

#include <signal.h>
#include <unistd.h>

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>
#include <string_view>

#include "app/control/control_client.h"
#include "app/launch/ssh/remote_agent.h"
#include "app/launch/ssh/ssh_launcher.h"
#include "app/monitor/host_file_source.h"
#include "app/remote/local_host.h"
#include "backend/protocol/cmdline/shell_words.h"
#include "backend/protocol/config/schema.h"
#include "backend/protocol/wire/agent_events.h"
#include "backend/protocol/wire/control_file.h"
#include "tests/app/cluster/follow_recorder.h"
#include "tests/app/cluster/ssh_test_util.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::app::cluster {

namespace {

constexpr int kWaitMs = 240'000;
const std::string kEngine = FS_TEST_FLAMINGO_TRAIN;

int portFor(int k) {
  return 20000 + (::getpid() % 2000) * 10 + k;
}

// The variables of this process that choose BLAS and OpenMP kernels and their blocking
// (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, OMP_*, MKL_*, ...). The agents below inherit them; an
// sshd session does not, so an SSH run that is to compute the same bits gets them in launch.env
// (NOTE [Launch environment] in backend/protocol/config/launch_env.h).
protocol::StringMap kernelEnvironment() {
  protocol::StringMap env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq);
    for (const std::string_view prefix : {"OPENBLAS_", "OMP_", "MKL_", "GOTO_", "BLIS_"}) {
      if (name.starts_with(prefix)) env[std::string(name)] = std::string(entry.substr(eq + 1));
    }
  }
  return env;
}

// Starts the agents of `argvs` on this machine with `env` added (as launchOverSsh adds it:
// agentEnvironment), stops the run (a control file) once it has done `steps` steps, and waits
// until every agent has ended.
bool runLocally(const std::string& runDir, const std::vector<std::vector<std::string>>& argvs,
                const std::vector<std::string>& env, qint64 steps, QString* why) {
  remote::LocalHost local;
  if (auto s = local.makeDirs(runDir + "/logs"); !s) {
    *why = QString::fromStdString(s.message());
    return false;
  }
  std::vector<AgentIdentity> agents;
  for (std::size_t i = 0; i < argvs.size(); ++i) {
    auto id =
        startDetached(local, runDir, runDir + "/logs/agent-" + std::to_string(i) + ".log", argvs[i], env);
    if (!id) {
      *why = QString::fromStdString(id.status().message());
      return false;
    }
    agents.push_back(id.value());
  }
  QDeadlineTimer deadline(kWaitMs);
  while (test::lossesByStep(runDir).size() < static_cast<std::size_t>(steps)) {
    if (deadline.hasExpired()) {
      *why = QStringLiteral("local reference run did not reach step %1").arg(steps);
      return false;
    }
    QTest::qWait(100);
  }
  if (auto issued = protocol::issueControl(runDir, protocol::ControlVerb::kStop); !issued) {
    *why = QString::fromStdString(issued.status().message());
    return false;
  }
  for (const auto& a : agents) {
    while (true) {
      auto state = probeAgent(local, a);
      if (!state || state.value() != AgentState::kAlive) break;
      if (deadline.hasExpired()) {
        *why = QStringLiteral("local reference run did not end");
        return false;
      }
      QTest::qWait(200);
    }
  }
  return true;
}

}  // namespace

class SshLaunchTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    hosts_ = std::make_unique<fs::testing::SshHosts>(2);
    if (!hosts_->ok()) FS_QT_FIXTURE_UNAVAILABLE("sshd hosts in network namespaces: " + hosts_->error());
    QVERIFY(runs_.isValid());
  }
  void cleanupTestCase() { hosts_.reset(); }

  void twoNodesArePausedCheckpointedStoppedAndMatchALocalRun() {
    test::SshOpener opener(*hosts_);
    SshLauncher launcher(opener.function());
    launcher.setPollIntervalMs(300);
    QSignalSpy started(&launcher, &Launcher::started);
    QSignalSpy failed(&launcher, &Launcher::failed);
    QSignalSpy finished(&launcher, &Launcher::finished);
    const int port = portFor(0);
    LaunchRequest request;
    // Long enough never to end by itself: it ends when it is stopped (no race with its end).
    request.config = test::tinyRun(
        {"optim.epochs=1000", "launch.kind=ssh", "launch.nnodes=2", "launch.nproc_per_node=2",
         "launch.hosts=[" + hosts_->alias(0) + ", " + hosts_->alias(1) + "]",
         "launch.master_addr=" + hosts_->hostAddress(0), "launch.master_port=" + std::to_string(port)});
    request.config.launch.env = kernelEnvironment();
    request.runRoot = runs_.filePath(QStringLiteral("ssh"));
    request.remoteEngine = QString::fromStdString(kEngine);
    launcher.launch(request);
    QTRY_VERIFY_WITH_TIMEOUT(started.count() == 1 || failed.count() == 1, kWaitMs);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
    const protocol::LaunchRecord record = launcher.record();
    QCOMPARE(record.nodes.size(), std::size_t{2});
    QVERIFY(record.shared_fs.value_or(false));  // one machine: the namespaces share the file system
    QVERIFY(record.nodes[0].agent_pid != record.nodes[1].agent_pid);
    const std::string runDir = record.run_dir;
    QVERIFY(runDir.starts_with(request.runRoot.toStdString()));

    auto head = opener.open(hosts_->alias(0));
    QVERIFY(head.isOk());
    ControlClient control;
    control.setRunDir(QString::fromStdString(runDir), head.value());
    QSignalSpy acked(&control, &ControlClient::acknowledged);
    test::FollowRecorder follow(std::make_shared<HostRunDir>(*head.value(), runDir), &control);
    QTRY_VERIFY_WITH_TIMEOUT(!follow.losses.empty(), kWaitMs);

    // Pause, checkpoint while paused, resume, stop: each acknowledged through the events.
    control.pause();
    QTRY_COMPARE_WITH_TIMEOUT(acked.count(), 1, kWaitMs);
    QVERIFY2(acked.at(0).at(1).toBool(), qPrintable(acked.at(0).at(2).toString()));
    control.checkpoint();
    QTRY_COMPARE_WITH_TIMEOUT(acked.count(), 2, kWaitMs);
    QVERIFY2(acked.at(1).at(1).toBool(), qPrintable(acked.at(1).at(2).toString()));
    const qint64 pausedAt = acked.at(1).at(3).toLongLong();
    control.resume();
    QTRY_COMPARE_WITH_TIMEOUT(acked.count(), 3, kWaitMs);
    QTRY_VERIFY_WITH_TIMEOUT(follow.losses.rbegin()->first > pausedAt, kWaitMs);  // it stepped on
    control.stop();
    QTRY_COMPARE_WITH_TIMEOUT(acked.count(), 4, kWaitMs);
    QVERIFY2(acked.at(3).at(1).toBool(), qPrintable(acked.at(3).at(2).toString()));

    QTRY_VERIFY_WITH_TIMEOUT(follow.finished, kWaitMs);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kWaitMs);
    QCOMPARE(finished.at(0).at(0).toInt(), 0);
    QCOMPARE(launcher.state(), LaunchState::kExited);
    QString why;
    QVERIFY2(follow.seqsComplete(&why), qPrintable(why));
    QVERIFY(QFileInfo::exists(
        QString::fromStdString(runDir + "/checkpoint_step" + std::to_string(pausedAt) + ".pt")));
    // A stop checkpoints at the step it stopped after.
    const qint64 stoppedAt = acked.at(3).at(3).toLongLong();
    QVERIFY(QFileInfo::exists(
        QString::fromStdString(runDir + "/checkpoint_step" + std::to_string(stoppedAt) + ".pt")));
    QCOMPARE(static_cast<qint64>(follow.losses.rbegin()->first), stoppedAt);
    // What the follower saw over SFTP is what the engine wrote.
    QCOMPARE(follow.losses, test::lossesByStep(runDir));

    // The same config on two agents of this machine, run to its end.
    const std::string reference = runs_.filePath(QStringLiteral("reference")).toStdString();
    std::vector<std::vector<std::string>> agents;
    for (int node = 0; node < 2; ++node) {
      agents.push_back({kEngine,
                        "launch",
                        "--nnodes",
                        "2",
                        "--node-rank",
                        std::to_string(node),
                        "--nproc-per-node",
                        "2",
                        "--master-addr",
                        "127.0.0.1",
                        "--master-port",
                        std::to_string(portFor(1)),
                        "--run-dir",
                        reference,
                        "--node-name",
                        "n" + std::to_string(node),
                        "--",
                        "train",
                        "--config",
                        runDir + "/config.yaml"});
    }
    // The same environment on top of this process's as the SSH agents got on top of the login one.
    QVERIFY2(runLocally(reference, agents, agentEnvironment(request.config), stoppedAt, &why),
             qPrintable(why));
    const auto local = test::lossesByStep(reference);
    for (const auto& [step, losses] : follow.losses) {
      QVERIFY2(local.count(step) == 1, qPrintable(QStringLiteral("step %1").arg(step)));
      QVERIFY2(local.at(step) == losses, qPrintable(QStringLiteral("losses differ at step %1").arg(step)));
    }
  }

  // launch.max_restarts over SSH (NOTE [Restarts] in backend/launch/node_agent.h): rank 1, alone on
  // node 1, is killed with -9 after a step checkpoint; rank 0 fails on its next collective; both
  // agents start their ranks again, the run resumes from the checkpoint, and the follower goes on
  // over SFTP across the attempts with every seq once. Stopped once the new attempt has stepped on.
  void aKilledRankIsRestartedOnEveryNode() {
    test::SshOpener opener(*hosts_);
    SshLauncher launcher(opener.function());
    launcher.setPollIntervalMs(300);
    QSignalSpy started(&launcher, &Launcher::started);
    QSignalSpy failed(&launcher, &Launcher::failed);
    QSignalSpy finished(&launcher, &Launcher::finished);
    LaunchRequest request;
    request.config = test::tinyRun(
        {"optim.epochs=1000", "launch.kind=ssh", "launch.nnodes=2", "launch.nproc_per_node=1",
         "launch.hosts=[" + hosts_->alias(0) + ", " + hosts_->alias(1) + "]",
         "launch.master_addr=" + hosts_->hostAddress(0), "launch.master_port=" + std::to_string(portFor(4)),
         "launch.max_restarts=1", "checkpoint.every_steps=3", "parallel.collective_timeout_s=60"});
    request.runRoot = runs_.filePath(QStringLiteral("restart"));
    request.remoteEngine = QString::fromStdString(kEngine);
    launcher.launch(request);
    QTRY_VERIFY_WITH_TIMEOUT(started.count() == 1 || failed.count() == 1, kWaitMs);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
    const std::string runDir = launcher.record().run_dir;
    auto head = opener.open(hosts_->alias(0));
    QVERIFY(head.isOk());
    ControlClient control;
    control.setRunDir(QString::fromStdString(runDir), head.value());
    QSignalSpy acked(&control, &ControlClient::acknowledged);
    test::FollowRecorder follow(std::make_shared<HostRunDir>(*head.value(), runDir), &control);
    // A complete step checkpoint, then kill -9 of rank 1 (the namespaces share this machine's pids).
    const std::string node1 = runDir + "/agent-" + nodeName(request.config.launch.hosts, 1) + ".jsonl";
    auto rankOnePids = [&] {
      std::vector<std::int64_t> pids;
      remote::LocalHost local;
      auto text = local.readFile(node1, 0, 1 << 20);
      if (!text.isOk()) return pids;
      for (const auto& e : protocol::decodeAgentEvents(text.value()).events)
        if (const auto* s = std::get_if<protocol::RankSpawnedEvent>(&e.body)) pids.push_back(s->pid);
      return pids;
    };
    QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(QString::fromStdString(runDir + "/checkpoint_step3.pt")),
                             kWaitMs);
    QTRY_VERIFY_WITH_TIMEOUT(rankOnePids().size() == 1, kWaitMs);
    QCOMPARE(::kill(static_cast<pid_t>(rankOnePids()[0]), SIGKILL), 0);
    // Both nodes restarted: run.json's second attempt, then a step of it.
    QTRY_VERIFY_WITH_TIMEOUT(follow.attempts.size() == 2, kWaitMs);
    QCOMPARE(rankOnePids().size(), std::size_t{2});
    QCOMPARE(follow.attempts[1].restart.value_or(-1), 1);
    QCOMPARE(follow.attempts[1].max_restarts.value_or(-1), 1);
    QVERIFY2(follow.attempts[1].reason.starts_with("rank 0 (pid "), follow.attempts[1].reason.c_str());
    const qint64 stepsBefore = static_cast<qint64>(follow.losses.size());
    const std::size_t seqsAtRestart = follow.seqs.size();
    QTRY_VERIFY_WITH_TIMEOUT(follow.seqs.size() > seqsAtRestart + 5, kWaitMs);
    QVERIFY(stepsBefore > 0);
    control.stop();
    QTRY_COMPARE_WITH_TIMEOUT(acked.count(), 1, kWaitMs);
    QTRY_VERIFY_WITH_TIMEOUT(follow.finished, kWaitMs);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kWaitMs);
    QCOMPARE(finished.at(0).at(0).toInt(), 0);
    QString why;
    QVERIFY2(follow.seqsComplete(&why), qPrintable(why));
    QCOMPARE(follow.losses, test::lossesByStep(runDir));
    for (const auto& i : follow.issues)
      QVERIFY2(i.kind != FollowIssue::Kind::kUndecodable, qPrintable(i.message));
  }

  // NOTE [Launch environment]: launch.env reaches every rank of every node through sshd, each value
  // verbatim. The engine on the hosts is a stand-in: the real node agent with the options the
  // launch gave it, whose ranks write what they received; a canary shows nothing was executed.
  void launchEnvReachesEveryRankThroughSshd() {
    const std::string dir = runs_.filePath(QStringLiteral("env-engine")).toStdString();
    const std::string canary = runs_.filePath(QStringLiteral("canary")).toStdString();
    remote::LocalHost local;
    QVERIFY(local.makeDirs(dir).isOk());
    const std::string engine = dir + "/flamingo-train";
    QVERIFY(local
                .writeFileAtomic(engine,
                                 "#!/bin/bash\n"
                                 "agent=()\n"
                                 "while [ $# -gt 0 ] && [ \"$1\" != -- ]; do agent+=(\"$1\"); shift; done\n"
                                 "exec " +
                                     protocol::quoteShellWord(kEngine) +
                                     " \"${agent[@]}\" -- /bin/sh -c 'printf \"%s|%s|%s\\n\" \"$FS_PLAIN\" "
                                     "\"$FS_HOSTILE\" \"${FS_EMPTY-unset}\" > \"$0/env-$RANK.tmp\" && "
                                     "mv \"$0/env-$RANK.tmp\" \"$0/env-$RANK\"; sleep 2' \"$PWD\"\n",
                                 0755)
                .isOk());
    const std::string hostile =
        "it's a \"v\" $(touch " + canary + ") `touch " + canary + "` ; | & * ~ \\ $HOME {a: b} ";
    SshLaunchPlan plan;
    plan.config = test::tinyRun({"launch.kind=ssh", "launch.nnodes=2", "launch.nproc_per_node=2",
                                 "launch.hosts=[" + hosts_->alias(0) + ", " + hosts_->alias(1) + "]",
                                 "launch.master_addr=" + hosts_->hostAddress(0),
                                 "launch.master_port=" + std::to_string(portFor(3))});
    plan.config.launch.env = {{"FS_PLAIN", "Haswell"}, {"FS_HOSTILE", hostile}, {"FS_EMPTY", ""}};
    plan.runRoot = runs_.filePath(QStringLiteral("env")).toStdString();
    plan.runName = "env";
    plan.engine = engine;
    test::SshOpener opener(*hosts_);
    auto launched = launchOverSsh(plan, opener.function(), {});
    QVERIFY2(launched.isOk(), launched.isOk() ? "" : launched.status().message().c_str());
    const std::string runDir = launched->record.run_dir;
    for (const char* rank : {"0", "1", "2", "3"}) {
      const QString file = QString::fromStdString(runDir + "/env-" + rank);
      QTRY_VERIFY2_WITH_TIMEOUT(QFileInfo::exists(file), qPrintable(QStringLiteral("rank %1").arg(rank)),
                                kWaitMs);
      auto text = local.readFile(file.toStdString(), 0, 1 << 16);
      QVERIFY(text.isOk());
      QCOMPARE(text.value(), "Haswell|" + hostile + "|\n");
    }
    for (const auto& n : launched->record.nodes) {
      auto host = opener.open(n.host);
      QVERIFY(host.isOk());
      QTRY_VERIFY_WITH_TIMEOUT(
          probeAgent(*host.value(), recordedAgent(n, launched->record.run_dir)).value() == AgentState::kGone,
          kWaitMs);
    }
    QVERIFY2(!QFileInfo::exists(QString::fromStdString(canary)), "a launch.env value was executed");
  }

  void closingTheAppLeavesTheRunGoingAndANewFollowerGetsItAll() {
    std::string runDir;
    protocol::LaunchRecord record;
    std::size_t seenBefore = 0;
    {
      test::SshOpener opener(*hosts_);
      auto launcher = std::make_unique<SshLauncher>(opener.function());
      QSignalSpy started(launcher.get(), &Launcher::started);
      QSignalSpy failed(launcher.get(), &Launcher::failed);
      LaunchRequest request;
      request.config =
          test::tinyRun({"optim.epochs=1000", "launch.kind=ssh", "launch.nnodes=2", "launch.nproc_per_node=1",
                         "launch.hosts=[" + hosts_->alias(0) + ", " + hosts_->alias(1) + "]",
                         "launch.master_addr=" + hosts_->hostAddress(0),
                         "launch.master_port=" + std::to_string(portFor(2))});
      request.runRoot = runs_.filePath(QStringLiteral("closed"));
      request.remoteEngine = QString::fromStdString(kEngine);
      launcher->launch(request);
      QTRY_VERIFY_WITH_TIMEOUT(started.count() == 1 || failed.count() == 1, kWaitMs);
      QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
      record = launcher->record();
      runDir = record.run_dir;
      auto head = opener.open(hosts_->alias(0));
      QVERIFY(head.isOk());
      auto follow =
          std::make_unique<test::FollowRecorder>(std::make_shared<HostRunDir>(*head.value(), runDir));
      QTRY_VERIFY_WITH_TIMEOUT(follow->losses.size() >= 2, kWaitMs);
      seenBefore = follow->seqs.size();
      // The window closes: follower, launcher and every SSH session go away.
      follow.reset();
      launcher.reset();
    }
    test::SshOpener opener(*hosts_);
    for (const auto& n : record.nodes) {
      auto host = opener.open(n.host);
      QVERIFY(host.isOk());
      auto state = probeAgent(*host.value(), recordedAgent(n, runDir));
      QVERIFY2(state.isOk(), state.isOk() ? "" : state.status().message().c_str());
      QCOMPARE(state.value(), AgentState::kAlive);
      // The same pid with another start time is not this agent: nothing is signalled.
      AgentIdentity reusedPid = recordedAgent(n, runDir);
      reusedPid.start_ticks += 1;
      auto reused = signalAgent(*host.value(), reusedPid, "KILL", true);
      QVERIFY(reused.isOk());
      QCOMPARE(reused.value(), AgentState::kReused);
      // This very process, asked for by another run directory (a copied launch.json): not signalled.
      auto other = signalAgent(*host.value(), recordedAgent(n, "/"), "KILL", true);
      QVERIFY(other.isOk());
      QCOMPARE(other.value(), AgentState::kOtherRun);
      QCOMPARE(probeAgent(*host.value(), recordedAgent(n, runDir)).value(), AgentState::kAlive);
    }
    auto head = opener.open(hosts_->alias(0));
    QVERIFY(head.isOk());
    ControlClient control;
    control.setRunDir(QString::fromStdString(runDir), head.value());
    QSignalSpy acked(&control, &ControlClient::acknowledged);
    test::FollowRecorder follow(std::make_shared<HostRunDir>(*head.value(), runDir), &control);
    QTRY_VERIFY_WITH_TIMEOUT(follow.seqs.size() > seenBefore, kWaitMs);  // the run went on meanwhile
    control.stop();
    QTRY_COMPARE_WITH_TIMEOUT(acked.count(), 1, kWaitMs);
    QTRY_VERIFY_WITH_TIMEOUT(follow.finished, kWaitMs);
    QString why;
    QVERIFY2(follow.seqsComplete(&why), qPrintable(why));  // the whole history, from seq 0
    QCOMPARE(follow.losses, test::lossesByStep(runDir));
    for (const auto& n : record.nodes) {
      auto host = opener.open(n.host);
      QTRY_VERIFY_WITH_TIMEOUT(
          probeAgent(*host.value(), recordedAgent(n, runDir)).value() == AgentState::kGone, kWaitMs);
    }
  }

 private:
  std::unique_ptr<fs::testing::SshHosts> hosts_;
  QTemporaryDir runs_{QStringLiteral("/tmp/fs-ssh-launch-XXXXXX")};
};

}  // namespace fs::app::cluster

QTEST_GUILESS_MAIN(fs::app::cluster::SshLaunchTest)
#include "ssh_launch_test.moc"
