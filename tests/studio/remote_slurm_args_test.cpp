// Issue 42 item 2: launch.slurm.extra_args from a config run code on the
// cluster. `flamingo-studio remote launch --slurm` (runRemoteCli, in this
// process) against a real private SLURM cluster (tests/fixtures/slurm_cluster.h),
// with a canary file that the job's bash would create: a config whose
// extra_args say --export=ALL,BASH_ENV=$(touch${IFS}CANARY) is refused without
// --allow-slurm-args (its lines listed), and refused by validation with it;
// options the script sets, written in the short or prefix forms sbatch takes,
// are refused too; an ordinary option with --allow-slurm-args is submitted
// and the job runs (so the refusals are not a cluster that runs nothing).
// NOTE [SLURM extra args] in app/launch/slurm/slurm_script.h.
#include <QCoreApplication>
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <sstream>

#include "app/remote/local_host.h"
#include "backend/protocol/config/config_yaml.h"
#include "studio/remote/remote_cli.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/slurm_cluster.h"

namespace fs::studio {

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

}  // namespace

class RemoteSlurmArgsTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    cluster_ = std::make_unique<fs::testing::SlurmCluster>();
    if (!cluster_->ok()) FS_QT_FIXTURE_UNAVAILABLE("slurm cluster: " + cluster_->error());
  }
  void cleanupTestCase() { cluster_.reset(); }

  void bashEnvIsRefusedWithoutAndWithTheFlag() {
    const std::string canary = path("CANARY-bash-env");
    const std::string config =
        writeConfig("bash-env", {"--export=ALL,BASH_ENV=$(touch${IFS}" + canary + ")"});
    Result plain = launch(config, {});
    settle(plain);
    QVERIFY2(!std::filesystem::exists(canary), "the job's bash ran BASH_ENV's command");
    QVERIFY2(plain.code == 2, (plain.out + plain.err).c_str());
    QVERIFY2(plain.err.find("--allow-slurm-args") != std::string::npos, plain.err.c_str());
    QVERIFY2(plain.err.find("launch.slurm.extra_args[0]: --export=ALL,BASH_ENV=$(touch${IFS}" + canary +
                            ")") != std::string::npos,
             plain.err.c_str());
    Result allowed = launch(config, {"--allow-slurm-args"});
    settle(allowed);
    QVERIFY2(allowed.code == 1, (allowed.out + allowed.err).c_str());
    QVERIFY2(allowed.err.find("launch.slurm.extra_args[0]") != std::string::npos &&
                 allowed.err.find("BASH_ENV") != std::string::npos,
             allowed.err.c_str());
    QVERIFY2(!std::filesystem::exists(canary), "the job's bash ran BASH_ENV's command");
  }

  void ownedOptionsInEveryFormAreRefused() {
    for (const std::string arg : {"-D/tmp", "-o/tmp/x.out", "-N64", "--chd=/tmp", "--out=/tmp/x.out",
                                  "--tasks-per-node=64", "-HJ other", "--wrap=id"}) {
      const std::string config = writeConfig("owned", {arg});
      Result r = launch(config, {"--allow-slurm-args"});
      settle(r);
      QVERIFY2(r.code == 1, (arg + ": " + r.out + r.err).c_str());
      QVERIFY2(r.err.find("launch.slurm.extra_args[0]") != std::string::npos, (arg + ": " + r.err).c_str());
    }
  }

  void anOrdinaryOptionIsSubmittedWithTheFlag() {
    const std::string config = writeConfig("ordinary", {"--comment=\"two words\""});
    Result r = launch(config, {"--allow-slurm-args"});
    const std::string job = settle(r);
    QVERIFY2(r.code == 0, (r.out + r.err).c_str());
    QVERIFY2(!job.empty(), r.out.c_str());
    // The job ran: its script's first line of output is in the run directory's SLURM log.
    const auto at = r.out.find("local:");
    QVERIFY2(at != std::string::npos, r.out.c_str());
    const std::string runDir = r.out.substr(at + 6, r.out.find('\n', at) - at - 6);
    app::remote::LocalHost host;
    auto log = host.readFile(runDir + "/logs/slurm-" + job + ".out", 0, 1 << 20);
    QVERIFY2(log.isOk() && log->find("job " + job + " on") != std::string::npos,
             log.isOk() ? log->c_str() : log.status().message().c_str());
  }

 private:
  std::string path(const std::string& name) const {
    return dir_.filePath(QString::fromStdString(name)).toStdString();
  }

  // A config file: the tiny preset with these extra_args.
  std::string writeConfig(const std::string& name, const std::vector<std::string>& extraArgs) {
    auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml");
    if (!load.ok()) qFatal("tiny preset: %s", protocol::formatProblems(load.problems).c_str());
    load.config.launch.slurm.extra_args = extraArgs;
    const std::string file = path(name + ".yaml");
    if (!protocol::saveConfigFile(load.config, file)) qFatal("cannot write %s", file.c_str());
    return file;
  }

  Result launch(const std::string& config, const std::vector<std::string>& more) {
    std::vector<std::string> args = {"launch",
                                     "--config",
                                     config,
                                     "--slurm",
                                     "local",
                                     "--engine",
                                     "/bin/true",
                                     "--run-root",
                                     path("runs"),
                                     "--slurm-env",
                                     "SLURM_CONF=" + cluster_->confPath()};
    args.insert(args.end(), more.begin(), more.end());
    std::ostringstream out, err;
    Result r;
    r.code = remote::runRemoteCli(args, out, err);
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  // When `r` submitted a job: waits (hang guard 120 s) until it has left the
  // queue, so a command it ran has run; returns its id ("" when none).
  std::string settle(const Result& r) {
    const std::string marker = "submitted batch job ";
    const auto at = r.out.find(marker);
    if (at == std::string::npos) return {};
    const std::string id = r.out.substr(at + marker.size(), r.out.find('\n', at) - at - marker.size());
    app::remote::LocalHost host;
    QDeadlineTimer guard(120'000);
    while (!guard.hasExpired()) {
      auto q = host.run(cluster_->command({"squeue", "-h", "-j", id, "-o", "%i"}));
      if (q.isOk() && q->exit_code == 0 && q->out.find(id) == std::string::npos) return id;
      QThread::msleep(200);
    }
    qWarning("job %s still queued after 120 s", id.c_str());
    return id;
  }

  QTemporaryDir dir_;
  std::unique_ptr<fs::testing::SlurmCluster> cluster_;
};

}  // namespace fs::studio

QTEST_GUILESS_MAIN(fs::studio::RemoteSlurmArgsTest)
#include "remote_slurm_args_test.moc"
