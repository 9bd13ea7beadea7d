// `flamingo-studio remote ...` as a person on a terminal or a script uses it: the
// real binary against real sshd hosts in network namespaces (tests/fixtures/
// ssh_hosts.h), with the fixture's ssh_config and --batch (nothing is asked).
// Pre-flight, launch on two nodes, ls, follow --jsonl, pause / resume / stop
// acknowledged, the SLURM script printed, an unknown host key refused with its
// fingerprint, usage errors with exit code 2. SLURM through a login node over
// SSH (a private cluster whose controller listens on the hosts' bridge): a
// previewed script submitted with --script (what sbatch received is the
// preview), queue, follow to the end, ls; and --slurm-env on a host whose
// sessions lack SLURM_CONF.
#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "app/remote/known_hosts.h"
#include "app/remote/local_host.h"
#include "tests/app/cluster/ssh_test_util.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/slurm_cluster.h"

namespace fs::studio {

namespace {

constexpr int kWaitMs = 300'000;

struct Result {
  int code = -1;
  QString out, err;
};

}  // namespace

class RemoteCliTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    hosts_ = std::make_unique<fs::testing::SshHosts>(2);
    if (!hosts_->ok()) FS_QT_FIXTURE_UNAVAILABLE("sshd hosts in network namespaces: " + hosts_->error());
    protocol::RunConfig c = app::test::tinyRun({"optim.epochs=20", "launch.nproc_per_node=1"});
    config_ = dir_.filePath(QStringLiteral("tiny.yaml"));
    QVERIFY(protocol::saveConfigFile(c, config_.toStdString()).isOk());
  }
  void cleanupTestCase() { hosts_.reset(); }

  void usageAndHelp() {
    Result help = studio({"--help"});
    QCOMPARE(help.code, 0);
    for (const char* word : {"hosts", "ls", "launch", "follow", "stop", "queue"})
      QVERIFY(help.out.contains(word));
    QCOMPARE(studio({"frobnicate"}).code, 2);
    QCOMPARE(studio({"launch", "--hosts", "a"}).code, 2);  // no --config
    Result bad = studio({"follow", "no-colon"});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains(QStringLiteral("HOST:RUN_DIR")), qPrintable(bad.err));
    QVERIFY(studio({"stop", "--help"}).out.contains(QStringLiteral("control_ack")));
  }

  void anUnknownHostKeyIsRefusedWithItsFingerprint() {
    const QString empty = dir_.filePath(QStringLiteral("empty_known_hosts"));
    QFile(empty).open(QIODevice::WriteOnly);
    Result r = studio({"ls", QString::fromStdString(hosts_->alias(0)), "--known-hosts", empty});
    QCOMPARE(r.code, 1);
    // The fingerprint as ssh-keygen -lf prints it for the host's public key.
    QProcess keygen;
    keygen.start(QStringLiteral("ssh-keygen"), {"-lf", QString::fromStdString(hosts_->hostPublicKeyFile(0))});
    QVERIFY(keygen.waitForFinished());
    const QString fingerprint = QString::fromUtf8(keygen.readAllStandardOutput()).split(' ').value(1);
    QVERIFY(fingerprint.startsWith(QStringLiteral("SHA256:")));
    QVERIFY2(r.err.contains(fingerprint), qPrintable(r.err));
  }

  void preflightLaunchFollowControl() {
    const QString hosts = QString::fromStdString(hosts_->alias(0) + "," + hosts_->alias(1));
    const QString root = dir_.filePath(QStringLiteral("runs"));
    const QString port = QString::number(21000 + ::getpid() % 4000);
    Result pre =
        studio({"hosts", hosts, "--engine", QStringLiteral(FS_TEST_FLAMINGO_TRAIN), "--run-root", root,
                "--master-addr", QString::fromStdString(hosts_->hostAddress(0)), "--master-port", port});
    QVERIFY2(pre.code == 0, qPrintable(pre.out + pre.err));
    QVERIFY2(pre.out.contains(QStringLiteral("rendezvous")), qPrintable(pre.out));

    Result launched = studio({"launch", "--config", config_, "--hosts", hosts, "--engine",
                              QStringLiteral(FS_TEST_FLAMINGO_TRAIN), "--run-root", root, "--set",
                              "launch.master_port=" + port});
    QVERIFY2(launched.code == 0, qPrintable(launched.out + launched.err));
    const QString where = launched.out.trimmed().split('\n').last();
    QVERIFY2(where.startsWith(QString::fromStdString(hosts_->alias(0)) + ':'), qPrintable(where));
    const QString runDir = where.section(':', 1);

    Result ls = studio({"ls", QString::fromStdString(hosts_->alias(0)), "--run-root", root});
    QCOMPARE(ls.code, 0);
    QVERIFY2(ls.out.contains(QFileInfo(runDir).fileName()) && ls.out.contains(QStringLiteral("ssh")),
             qPrintable(ls.out));

    QProcess follow;
    follow.start(QStringLiteral(FS_STUDIO), cliArgs({"follow", where, "--jsonl"}));
    QVERIFY(follow.waitForStarted());
    // Commands issued before the engine's attempt started are refused as stale: wait for a step.
    auto stepped = [&runDir] {
      QFile f(runDir + QStringLiteral("/events.jsonl"));
      return f.open(QIODevice::ReadOnly) && f.readAll().contains("\"type\":\"step\"");
    };
    QTRY_VERIFY_WITH_TIMEOUT(stepped(), kWaitMs);
    Result paused = studio({"pause", where});
    QVERIFY2(paused.code == 0 && paused.out.contains(QStringLiteral("done: pause")),
             qPrintable(paused.out + paused.err));
    Result resumed = studio({"resume", where});
    QVERIFY2(resumed.code == 0, qPrintable(resumed.out + resumed.err));
    // A copy of this run's launch.json in another directory names these very agents
    // (alive, same identity): kill --agents there signals nothing, and says why.
    const QString copied = dir_.filePath(QStringLiteral("copied-run"));
    QVERIFY(QDir().mkpath(copied));
    QVERIFY(QFile::copy(runDir + QStringLiteral("/launch.json"), copied + QStringLiteral("/launch.json")));
    Result foreign = studio({"kill", QString::fromStdString(hosts_->alias(0)) + ':' + copied, "--agents"});
    QCOMPARE(foreign.code, 1);
    QVERIFY2(foreign.err.contains(QStringLiteral("is not this run's agent")) && foreign.err.contains(copied),
             qPrintable(foreign.out + foreign.err));
    Result stopped = studio({"stop", where});
    QVERIFY2(stopped.code == 0 && stopped.out.contains(QStringLiteral("done: stop")),
             qPrintable(stopped.out + stopped.err));
    QVERIFY(follow.waitForFinished(kWaitMs));
    QCOMPARE(follow.exitCode(), 0);
    // --jsonl copied every line the engine wrote, once, in order.
    QFile events(runDir + QStringLiteral("/events.jsonl"));
    QVERIFY(events.open(QIODevice::ReadOnly));
    QCOMPARE(follow.readAllStandardOutput(), events.readAll());
  }

  void theSlurmScriptIsPrinted() {
    Result r = studio({"launch", "--config", config_, "--slurm", "local", "--print-script", "--set",
                       "launch.nnodes=2", "--engine", "/opt/flamingo/bin/flamingo-train"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.startsWith(QStringLiteral("#!")));
    QVERIFY(r.out.contains(QStringLiteral("#SBATCH --nodes=2")));
    QVERIFY(r.out.contains(QStringLiteral("srun")));
    QVERIFY(r.out.contains(QStringLiteral("/opt/flamingo/bin/flamingo-train")));
  }

  // Issue 26 item 5: pipe: commands are refused without --allow-pipe, before any host is contacted.
  void pipeCommandsNeedAllowPipe() {
    const QStringList pipe = {"--set", "data.source=shards",
                              "--set", "data.datasets[0].shards=pipe:cat /d/{0..1}.tar",
                              "--set", "data.datasets[1].shards=/d/mmc4-{0..1}.tar"};
    Result refused =
        studio(QStringList{"launch", "--config", config_, "--hosts", "no-such-host.invalid"} + pipe);
    QCOMPARE(refused.code, 2);
    QVERIFY2(refused.err.contains(QStringLiteral("refused without --allow-pipe")), qPrintable(refused.err));
    QVERIFY2(refused.err.contains(QStringLiteral("      cat /d/1.tar")), qPrintable(refused.err));
    Result script = studio(QStringList{"launch", "--config", config_, "--slurm", "local", "--print-script",
                                       "--allow-pipe", "--engine", "/opt/fs/flamingo-train"} +
                           pipe);
    QVERIFY2(script.code == 0, qPrintable(script.err));
    QVERIFY2(script.out.contains(QStringLiteral("--set launch.kind=external --allow-pipe\n")),
             qPrintable(script.out));
  }

  void slurmThroughALoginNode() {
    fs::testing::SlurmCluster cluster(hosts_->rootAddress());
    if (!cluster.ok()) FS_QT_FIXTURE_UNAVAILABLE("slurm cluster: " + cluster.error());
    // The login node's sessions find the cluster as a site's profile would say (no --slurm-env).
    if (!hosts_->setSessionEnvironment(0, {"SLURM_CONF=" + cluster.confPath()}))
      FS_QT_FIXTURE_UNAVAILABLE("login node: " + hosts_->error());
    const QString login = QString::fromStdString(hosts_->alias(0));
    const QStringList launch = {"launch",
                                "--config",
                                config_,
                                "--slurm",
                                login,
                                "--engine",
                                QStringLiteral(FS_TEST_FLAMINGO_TRAIN),
                                "--run-root",
                                dir_.filePath(QStringLiteral("slurm runs")),
                                "--set",
                                "optim.epochs=1"};
    Result preview = studio(launch + QStringList{"--print-script"});
    QVERIFY2(preview.code == 0, qPrintable(preview.err));
    const QString previewFile = dir_.filePath(QStringLiteral("preview.sbatch"));
    {
      QFile f(previewFile);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(preview.out.toUtf8());
    }
    // Submitted in a later second (a new run directory would have another name): the job goes into
    // the run directory the preview was made for.
    const QString previewed = QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
    QTRY_VERIFY(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")) != previewed);
    Result submitted = studio(launch + QStringList{"--script", previewFile});
    QVERIFY2(submitted.code == 0, qPrintable(submitted.out + submitted.err));
    const QStringList lines = submitted.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 2);
    QVERIFY2(lines[0].startsWith(QStringLiteral("submitted batch job ")), qPrintable(lines[0]));
    const QString id = lines[0].section(' ', 3);
    const QString where = lines[1];
    QVERIFY2(where.startsWith(login + ':'), qPrintable(where));
    const QString runDir = where.section(':', 1);
    QVERIFY2(preview.out.contains("#SBATCH --chdir=\"" + runDir + "\"\n"), qPrintable(preview.out));
    // What sbatch received is the preview, byte for byte.
    app::remote::LocalHost local;
    auto sent = local.run(cluster.command({"scontrol", "write", "batch_script", id.toStdString(), "-"}));
    QVERIFY2(sent.isOk() && sent->exit_code == 0, sent.isOk() ? sent->err.c_str() : "scontrol");
    QCOMPARE(QString::fromStdString(sent->out), preview.out);

    Result queue = studio({"queue", login, "--job", id});
    QVERIFY2(queue.code == 0 && queue.out.contains(QStringLiteral("JOBID")) && queue.out.contains(id),
             qPrintable(queue.out + queue.err));
    Result follow = studio({"follow", where, "--jsonl"});
    QVERIFY2(follow.code == 0, qPrintable(follow.err));
    QFile events(runDir + QStringLiteral("/events.jsonl"));
    QVERIFY(events.open(QIODevice::ReadOnly));
    QCOMPARE(follow.out.toUtf8(), events.readAll());
    QVERIFY(follow.out.contains(QStringLiteral("\"type\":\"run_finished\"")));
    Result ls = studio({"ls", login, "--run-root", dir_.filePath(QStringLiteral("slurm runs"))});
    QVERIFY2(ls.code == 0 && ls.out.contains("slurm job " + id), qPrintable(ls.out + ls.err));

    // Host 1's sessions have no SLURM_CONF: --slurm-env points the commands at the cluster; an
    // ended job given with --job is listed too.
    Result other = studio({"queue", QString::fromStdString(hosts_->alias(1)), "--job", id, "--slurm-env",
                           QString::fromStdString("SLURM_CONF=" + cluster.confPath())});
    QVERIFY2(other.code == 0 && other.out.contains(id) && other.out.contains(QStringLiteral("COMPLETED")),
             qPrintable(other.out + other.err));
    QVERIFY(hosts_->setSessionEnvironment(0, {}));
  }

 private:
  QStringList cliArgs(QStringList args) const {
    args.prepend(QStringLiteral("remote"));
    args << "--ssh-config" << QString::fromStdString(hosts_->configPath()) << "--batch";
    return args;
  }
  Result studio(const QStringList& args) const {
    QProcess p;
    p.start(QStringLiteral(FS_STUDIO), cliArgs(args));
    Result r;
    if (!p.waitForFinished(kWaitMs)) return r;
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
  }

  QTemporaryDir dir_{QStringLiteral("/tmp/fs-remote-cli-XXXXXX")};
  std::unique_ptr<fs::testing::SshHosts> hosts_;
  QString config_;
};

}  // namespace fs::studio

QTEST_GUILESS_MAIN(fs::studio::RemoteCliTest)
#include "remote_cli_test.moc"
