// SLURM through a login node over SSH: a real private cluster
// (tests/fixtures/slurm_cluster.h) whose controller listens on the bridge of
// the sshd hosts in network namespaces (tests/fixtures/ssh_hosts.h); host h0
// is the login node, its sessions carry SLURM_CONF as a site's profile would.
// Through an SshHost, with no command prefix (as the GUI's RemoteWorker and
// queue panel): sbatch of the generated script (SLURM holds it byte for byte),
// the job followed by SlurmPoller, its run directory by RunFollower over SFTP,
// squeue --me, scancel (the engine checkpoints and stops); and through a host
// whose sessions lack SLURM_CONF, the command prefix. Waits are on conditions
// with generous limits (hang guards), never on timings.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>

#include "app/common/worker_thread.h"
#include "app/launch/slurm/slurm_jobs.h"
#include "app/launch/slurm/slurm_poller.h"
#include "app/launch/slurm/slurm_script.h"
#include "app/monitor/host_file_source.h"
#include "tests/app/cluster/follow_recorder.h"
#include "tests/app/cluster/ssh_test_util.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/slurm_cluster.h"

namespace fs::app::cluster {

namespace {

namespace proto = fs::protocol;
constexpr int kWaitMs = 240'000;
constexpr int kLogin = 0;  // the login node; host 1's sessions have no SLURM_CONF

std::string readAll(const std::string& path) {
  QFile f(QString::fromStdString(path));
  return f.open(QIODevice::ReadOnly) ? f.readAll().toStdString() : std::string();
}

bool hasState(const QList<SlurmJobRow>& rows, const std::string& id, const std::string& state) {
  return std::any_of(rows.begin(), rows.end(),
                     [&](const SlurmJobRow& r) { return r.id == id && r.state == state; });
}

}  // namespace

class SlurmSshTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(runs_.isValid());
    hosts_ = std::make_unique<fs::testing::SshHosts>(2);
    if (!hosts_->ok()) FS_QT_FIXTURE_UNAVAILABLE("sshd hosts in network namespaces: " + hosts_->error());
    cluster_ = std::make_unique<fs::testing::SlurmCluster>(hosts_->rootAddress());
    if (!cluster_->ok()) FS_QT_FIXTURE_UNAVAILABLE("slurm cluster: " + cluster_->error());
    if (!hosts_->setSessionEnvironment(kLogin, {"SLURM_CONF=" + cluster_->confPath()}))
      FS_QT_FIXTURE_UNAVAILABLE("login node: " + hosts_->error());
    opener_ = std::make_unique<test::SshOpener>(*hosts_);
    auto login = opener_->open(hosts_->alias(kLogin));
    QVERIFY2(login.isOk(), login.isOk() ? "" : login.status().message().c_str());
    login_ = login.value();
  }
  void cleanup() {
    if (!login_) return;
    SlurmJobs jobs(*login_);
    for (const auto& id : submitted_) {
      auto j = jobs.job(id);
      if (j && isActiveState(j->state)) jobs.cancel(id);
    }
    submitted_.clear();
  }
  void cleanupTestCase() {
    login_.reset();
    opener_.reset();
    cluster_.reset();  // ends every job and daemon of this cluster
    hosts_.reset();
  }

  void aJobThroughTheLoginNodeIsFollowedAndCancelled() {
    SlurmJobs jobs(*login_);  // no prefix: the login node's sessions say where the cluster is
    // Quotes, blanks, '$' and '%' in the run directory: through ssh's shell, sbatch and --output.
    const std::string dir = runs_.path().toStdString() + "/run 'a' \"b\" $HOME %j";
    const proto::RunConfig config = test::tinyRun(
        {"optim.epochs=100000", "launch.kind=slurm", "launch.nproc_per_node=1"});  // ended by scancel
    auto script = makeSlurmScript(config, {dir, FS_TEST_FLAMINGO_TRAIN, ""});
    QVERIFY2(script.isOk(), script.status().message().c_str());
    auto id = jobs.submit(dir, script.value(), config);
    QVERIFY2(id.isOk(), id.status().message().c_str());
    submitted_.push_back(id.value());

    // What sbatch received, read back through the login node: the preview, byte for byte.
    auto sent = jobs.batchScript(id.value());
    QVERIFY2(sent.isOk(), sent.status().message().c_str());
    QCOMPARE(sent.value(), script.value());

    // The poller on its worker thread with the SSH host, as the queue panel runs it.
    auto* poller = new SlurmPoller(login_);
    poller->setIntervalMs(300);
    WorkerThread<SlurmPoller> thread(poller, QStringLiteral("slurm poller"));
    QList<SlurmJobRow> seen;
    QList<QString> failures;
    QObject receiver;  // goes before `seen`: no queued row arrives after it
    connect(poller, &SlurmPoller::rows, &receiver, [&](const QList<SlurmJobRow>& rows) { seen << rows; });
    connect(poller, &SlurmPoller::failed, &receiver, [&](const QString& m, int) { failures << m; });
    QMetaObject::invokeMethod(poller, "watch", Qt::QueuedConnection,
                              Q_ARG(QStringList, QStringList{QString::fromStdString(id.value())}));

    // The run directory followed over SFTP from the login node, as the monitor follows it.
    test::FollowRecorder follow(std::make_shared<HostRunDir>(*login_, dir));
    QTRY_VERIFY2_WITH_TIMEOUT(follow.losses.size() >= 2, log(dir, id.value()).c_str(), kWaitMs);
    QTRY_VERIFY_WITH_TIMEOUT(hasState(seen, id.value(), "RUNNING"), kWaitMs);
    const auto running = std::find_if(seen.begin(), seen.end(), [&](const SlurmJobRow& r) {
      return r.id == id.value() && r.state == "RUNNING";
    });
    QCOMPARE(running->nodelist, cluster_->nodeName());
    QVERIFY2(failures.isEmpty(), qPrintable(failures.value(0)));

    // squeue --me through the login node.
    auto mine = jobs.queue();
    QVERIFY2(mine.isOk(), mine.status().message().c_str());
    QVERIFY(
        std::any_of(mine->begin(), mine->end(), [&](const SlurmJobRow& r) { return r.id == id.value(); }));
    // A host whose sessions lack SLURM_CONF: the command prefix points the commands at the cluster.
    auto other = opener_->open(hosts_->alias(1));
    QVERIFY2(other.isOk(), other.isOk() ? "" : other.status().message().c_str());
    auto listed = SlurmJobs(*other.value(), cluster_->commandPrefix()).queue({id.value()});
    QVERIFY2(listed.isOk(), listed.status().message().c_str());
    QCOMPARE(listed->size(), std::size_t{1});
    QCOMPARE(listed->front().state, std::string("RUNNING"));

    // scancel through the login node: SIGTERM reaches the engine, which checkpoints and stops.
    QVERIFY(jobs.cancel(id.value()).isOk());
    QTRY_VERIFY2_WITH_TIMEOUT(hasState(seen, id.value(), "CANCELLED"), log(dir, id.value()).c_str(), kWaitMs);
    QTRY_VERIFY2_WITH_TIMEOUT(follow.finished, log(dir, id.value()).c_str(), kWaitMs);
    QVERIFY(follow.finishStatus == proto::FinishStatus::kStopped);
    poller->stop();
    // The poller's last row came from scontrol (with the exit code); squeue still lists the ended job.
    QVERIFY(std::any_of(seen.begin(), seen.end(), [&](const SlurmJobRow& r) {
      return r.id == id.value() && r.state == "CANCELLED" && !r.exit_code.empty();
    }));
    auto ended = jobs.queue({id.value()});
    QVERIFY2(ended.isOk(), ended.status().message().c_str());
    QCOMPARE(ended->size(), std::size_t{1});
    QCOMPARE(ended->front().state, std::string("CANCELLED"));
    QString why;
    QVERIFY2(follow.seqsComplete(&why), qPrintable(why));
    QCOMPARE(follow.losses, test::lossesByStep(dir));  // what SFTP delivered is what the engine wrote
    const auto checkpoints =
        test::eventsOf<proto::CheckpointEvent>(test::readEvents(QString::fromStdString(dir)));
    QVERIFY(!checkpoints.empty());
    QCOMPARE(checkpoints.back().step, follow.losses.rbegin()->first);
    // The job's log went where the script said, with the run directory's quotes and '%' intact.
    QVERIFY2(readAll(slurmLogPath(dir, id.value())).find("job " + id.value() + " on ") != std::string::npos,
             log(dir, id.value()).c_str());
  }

 private:
  // For failure messages: the job's SLURM log and rank 0's log, tails.
  std::string log(const std::string& dir, const std::string& id) const {
    const std::string text = readAll(slurmLogPath(dir, id)) + readAll(dir + "/logs/rank-0.log");
    return "job " + id + " log:\n" + (text.size() > 4000 ? text.substr(text.size() - 4000) : text);
  }

  std::unique_ptr<fs::testing::SshHosts> hosts_;
  std::unique_ptr<fs::testing::SlurmCluster> cluster_;
  std::unique_ptr<test::SshOpener> opener_;
  std::shared_ptr<remote::Host> login_;
  std::vector<std::string> submitted_;
  QTemporaryDir runs_{QStringLiteral("/tmp/fs-slurm-ssh-XXXXXX")};
};

}  // namespace fs::app::cluster

QTEST_GUILESS_MAIN(fs::app::cluster::SlurmSshTest)
#include "slurm_ssh_test.moc"
