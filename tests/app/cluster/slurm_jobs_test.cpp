// SlurmJobs and SlurmPoller against a real private SLURM cluster
// (tests/fixtures/slurm_cluster.h) through LocalHost: squeue's real output
// parsed, scancel, a real flamingo-train run started by the generated script
// (two ranks found through SLURM's variables) and followed to its end, a
// cancelled one that stops with a checkpoint (scancel's SIGTERM), the
// script sbatch received equal to the previewed one, and a requeued run that
// resumes from its newest step checkpoint with losses equal, bit for bit, to
// those of an uninterrupted run. Waits are on conditions with generous limits
// (hang guards), never on timings.
#include "app/launch/slurm/slurm_jobs.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <map>
#include <memory>

#include "../launch/launch_test_util.h"
#include "app/common/worker_thread.h"
#include "app/launch/slurm/slurm_poller.h"
#include "app/launch/slurm/slurm_script.h"
#include "app/remote/local_host.h"
#include "backend/protocol/config/config_override.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/slurm_cluster.h"

namespace fs::app::cluster {
namespace {

namespace proto = fs::protocol;
constexpr int kWaitMs = 120'000;

// The tiny preset, short, one intra-op thread per rank (the same arithmetic in every run).
proto::RunConfig tinyJob(int ranks, const std::vector<std::string>& more = {}) {
  proto::RunConfig c = test::tinyConfig();
  std::vector<std::string> sets = {"optim.epochs=1",
                                   "optim.warmup_steps=0",
                                   "data.datasets.laion.samples_per_epoch=16",
                                   "data.datasets.mmc4.samples_per_epoch=8",
                                   "launch.kind=slurm",
                                   "launch.threads_per_rank=1",
                                   "launch.nproc_per_node=" + std::to_string(ranks)};
  sets.insert(sets.end(), more.begin(), more.end());
  const auto problems = proto::applyOverrides(&c, sets);
  if (!problems.empty()) qFatal("overrides: %s", proto::formatProblems(problems).c_str());
  return c;
}

std::optional<proto::RunFinishedEvent> finished(const std::string& runDir) {
  const auto f = test::eventsOf<proto::RunFinishedEvent>(test::readEvents(QString::fromStdString(runDir)));
  for (const auto& e : f) {
    if (e.status == proto::FinishStatus::kOk) return e;
  }
  return std::nullopt;
}

// Step -> losses; a step seen twice (before and after a resume) keeps its last value.
std::map<std::int64_t, std::map<std::string, double>> lossesByStep(const std::string& runDir) {
  std::map<std::int64_t, std::map<std::string, double>> out;
  for (const auto& s : test::eventsOf<proto::StepEvent>(test::readEvents(QString::fromStdString(runDir)))) {
    out[s.step] = s.loss;
  }
  return out;
}

std::string readAll(const std::string& path) {
  remote::LocalHost host;
  auto r = host.readFile(path, 0, 64u << 20);
  return r ? r.value() : std::string();
}

}  // namespace

class SlurmJobsTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    cluster_ = std::make_unique<fs::testing::SlurmCluster>();
    if (!cluster_->ok()) FS_QT_FIXTURE_UNAVAILABLE("slurm cluster: " + cluster_->error());
    QVERIFY(runs_.isValid());
    jobs_ = std::make_unique<SlurmJobs>(host_, cluster_->commandPrefix());
  }
  // A test that failed half way leaves no job to hold the node's CPUs for the next one.
  void cleanup() {
    for (const auto& id : submitted_) {
      auto j = jobs_->job(id);
      if (j && isActiveState(j->state)) jobs_->cancel(id);
    }
    submitted_.clear();
  }
  void cleanupTestCase() {
    jobs_.reset();
    cluster_.reset();  // ends every job and daemon of this cluster
  }

  void squeueParsesRealOutputAndScancelEndsAJob() {
    const std::string dir = runDir("sleeper");
    const std::string name = "a job | with bars, spaces and 'quotes'";
    const std::string script = "#!/bin/bash\n#SBATCH --job-name=\"" + name + "\"\n#SBATCH --output=" + dir +
                               "/logs/slurm-%j.out\nsleep 600\n";
    auto id = submit(dir, script, tinyJob(1));
    QVERIFY2(id.isOk(), id.status().message().c_str());
    std::vector<SlurmJobRow> rows;
    QTRY_VERIFY_WITH_TIMEOUT(state(id.value(), &rows) == "RUNNING", kWaitMs);
    QCOMPARE(rows.size(), std::size_t{1});
    QCOMPARE(rows[0].id, id.value());
    QCOMPARE(rows[0].name, name);
    QCOMPARE(rows[0].nodes, std::string("1"));
    QCOMPARE(rows[0].nodelist, cluster_->nodeName());
    QCOMPARE(rows[0].reason, std::string("None"));
    auto mine = jobs_->queue();  // squeue --me
    QVERIFY2(mine.isOk(), mine.status().message().c_str());
    QVERIFY(
        std::any_of(mine->begin(), mine->end(), [&](const SlurmJobRow& r) { return r.id == id.value(); }));

    QVERIFY(jobs_->cancel(id.value()).isOk());
    QTRY_VERIFY_WITH_TIMEOUT(endedState(id.value()) == "CANCELLED", kWaitMs);
    // The finished job as jobcomp/filetxt recorded it.
    QTRY_VERIFY_WITH_TIMEOUT(
        readAll(cluster_->jobCompFile()).find("JobId=" + id.value() + " ") != std::string::npos, kWaitMs);
    SlurmJobRow comp;
    for (const auto& line : QString::fromStdString(readAll(cluster_->jobCompFile())).split('\n')) {
      auto row = rowFromKeyValues(parseKeyValues(line.toStdString()));
      if (row.id == id.value()) comp = row;
    }
    QCOMPARE(comp.state, std::string("CANCELLED"));
    QVERIFY(!jobs_->cancel("1;rm").isOk());
    // Ids the controller never had: no rows, and kNotFound from scontrol.
    auto none = jobs_->queue({"999999"});
    QVERIFY2(none.isOk(), none.status().message().c_str());
    QVERIFY(none->empty());
    QCOMPARE(jobs_->job("999999").status().code(), proto::Status::Code::kNotFound);
    auto refused = submit(dir, "no shebang\n", tinyJob(1));
    QVERIFY(!refused.isOk());
    QVERIFY2(refused.status().message().find("sbatch") != std::string::npos,
             refused.status().message().c_str());
  }

  void tinyRunIsFollowedToItsEnd() {
    const std::string dir = runDir("run 'a' \"b\" $HOME %j");
    const proto::RunConfig config = tinyJob(2);
    auto script = makeSlurmScript(config, {dir, FS_TEST_FLAMINGO_TRAIN, ""});
    QVERIFY2(script.isOk(), script.status().message().c_str());
    auto id = submit(dir, script.value(), config);
    QVERIFY2(id.isOk(), id.status().message().c_str());

    // The poller on its worker thread, as the app runs it.
    auto* poller = new SlurmPoller(std::make_shared<remote::LocalHost>(), cluster_->commandPrefix());
    poller->setIntervalMs(300);
    WorkerThread<SlurmPoller> thread(poller, QStringLiteral("slurm poller"));
    QList<SlurmJobRow> seen;
    connect(poller, &SlurmPoller::rows, this, [&](const QList<SlurmJobRow>& rows) { seen << rows; });
    QMetaObject::invokeMethod(poller, "watch", Qt::QueuedConnection,
                              Q_ARG(QStringList, QStringList{QString::fromStdString(id.value())}));

    auto sent = jobs_->batchScript(id.value());
    QVERIFY2(sent.isOk(), sent.status().message().c_str());
    QCOMPARE(sent.value(), script.value());

    QTRY_VERIFY2_WITH_TIMEOUT(finished(dir).has_value(), log(dir, id.value()).c_str(), kWaitMs);
    const auto started =
        test::eventsOf<proto::RunStartedEvent>(test::readEvents(QString::fromStdString(dir)));
    QCOMPARE(started.size(), std::size_t{1});
    QCOMPARE(started[0].world_size, 2);  // two srun tasks found each other through SLURM's variables
    QVERIFY(finished(dir)->steps > 0);
    QTRY_VERIFY_WITH_TIMEOUT(
        std::any_of(seen.begin(), seen.end(), [](const SlurmJobRow& r) { return r.state == "COMPLETED"; }),
        kWaitMs);
    // The log went where the script said, with the run directory's '%' and quotes intact.
    QVERIFY2(readAll(slurmLogPath(dir, id.value())).find("job " + id.value() + " on ") != std::string::npos,
             log(dir, id.value()).c_str());
    auto ended = jobs_->job(id.value());
    QVERIFY2(ended.isOk(), ended.status().message().c_str());
    QCOMPARE(ended->exit_code, std::string("0:0"));
    poller->stop();
  }

  // NOTE [Launch environment]: the script's exports reach every srun task, verbatim. The
  // "engine" is a script that writes what its task received; a canary shows nothing ran.
  void launchEnvReachesEveryTask() {
    const std::string dir = runDir("env");
    const std::string canary = runDir("canary");
    const std::string engine = runDir("fake-engine.sh");
    QVERIFY(host_
                .writeFileAtomic(
                    engine,
                    "#!/bin/sh\nprintf '%s|%s|%s\\n' \"$FS_PLAIN\" \"$FS_HOSTILE\" \"${FS_EMPTY-unset}\" "
                    "> \"env-$SLURM_PROCID.tmp\" && mv \"env-$SLURM_PROCID.tmp\" \"env-$SLURM_PROCID\"\n",
                    0755)
                .isOk());
    const std::string hostile =
        "it's a \"v\" $(touch " + canary + ") `touch " + canary + "` ; | & * ~ \\ $HOME %j ";
    proto::RunConfig config = tinyJob(2);
    config.launch.env = {{"FS_PLAIN", "Haswell"}, {"FS_HOSTILE", hostile}, {"FS_EMPTY", ""}};
    auto script = makeSlurmScript(config, {dir, engine, ""});
    QVERIFY2(script.isOk(), script.status().message().c_str());
    auto id = submit(dir, script.value(), config);
    QVERIFY2(id.isOk(), id.status().message().c_str());
    for (const char* rank : {"0", "1"}) {
      QTRY_VERIFY2_WITH_TIMEOUT(QFileInfo::exists(QString::fromStdString(dir + "/env-" + rank)),
                                log(dir, id.value()).c_str(), kWaitMs);
      QCOMPARE(readAll(dir + "/env-" + rank), "Haswell|" + hostile + "|\n");
    }
    QTRY_VERIFY_WITH_TIMEOUT(endedState(id.value()) == "COMPLETED", kWaitMs);
    QVERIFY2(!QFileInfo::exists(QString::fromStdString(canary)), "a launch.env value was executed");
  }

  void cancelledRunStopsWithACheckpoint() {
    const proto::RunConfig config = tinyJob(1, {"optim.epochs=100000"});  // ended by the test
    const std::string dir = runDir("cancelled");
    auto id = submit(dir, makeSlurmScript(config, {dir, FS_TEST_FLAMINGO_TRAIN, ""}).value(), config);
    QVERIFY2(id.isOk(), id.status().message().c_str());
    QTRY_VERIFY2_WITH_TIMEOUT(
        !test::eventsOf<proto::StepEvent>(test::readEvents(QString::fromStdString(dir))).empty(),
        log(dir, id.value()).c_str(), kWaitMs);
    QVERIFY(jobs_->cancel(id.value()).isOk());
    QTRY_VERIFY2_WITH_TIMEOUT(endedState(id.value()) == "CANCELLED", log(dir, id.value()).c_str(), kWaitMs);
    // scancel's SIGTERM reached the engine, which checkpointed and said it stopped.
    QTRY_VERIFY2_WITH_TIMEOUT(
        [&] {
          const auto ends =
              test::eventsOf<proto::RunFinishedEvent>(test::readEvents(QString::fromStdString(dir)));
          return !ends.empty() && ends.back().status == proto::FinishStatus::kStopped;
        }(),
        log(dir, id.value()).c_str(), kWaitMs);
    const auto steps = test::eventsOf<proto::StepEvent>(test::readEvents(QString::fromStdString(dir)));
    const auto checkpoints =
        test::eventsOf<proto::CheckpointEvent>(test::readEvents(QString::fromStdString(dir)));
    QVERIFY(!checkpoints.empty());
    QCOMPARE(checkpoints.back().step, steps.back().step);
  }

  void aFailingSqueueIsReportedAndBacksOff() {
    // A login node without the SLURM commands: every poll fails at once.
    SlurmPoller poller(std::make_shared<remote::LocalHost>(), {"env", "PATH=" + runDir("no-such-dir")});
    poller.setIntervalMs(50'000);  // no second poll within the test
    QSignalSpy failed(&poller, &SlurmPoller::failed);
    QSignalSpy rows(&poller, &SlurmPoller::rows);
    poller.watch({QStringLiteral("1")});
    QCOMPARE(failed.count(), 1);
    QCOMPARE(rows.count(), 0);
    QVERIFY2(failed.at(0).at(0).toString().contains(QLatin1String("squeue")),
             qPrintable(failed.at(0).at(0).toString()));
    QCOMPARE(failed.at(0).at(1).toInt(), 100'000);
    poller.pollNow();
    QCOMPARE(failed.at(1).at(1).toInt(), SlurmPoller::kMaxBackoffMs);  // 200 s, capped
    poller.stop();
  }

  void requeuedRunResumesWithTheSameLosses() {
    // Long enough to be requeued after a step checkpoint and before its end.
    const std::vector<std::string> longer = {"optim.epochs=2", "data.datasets.laion.samples_per_epoch=64",
                                             "data.datasets.mmc4.samples_per_epoch=32",
                                             "checkpoint.every_steps=2"};
    const proto::RunConfig config = tinyJob(1, longer);
    const std::string dir = runDir("requeued"), reference = runDir("reference");
    auto script = makeSlurmScript(config, {dir, FS_TEST_FLAMINGO_TRAIN, ""});
    QVERIFY2(script.isOk(), script.status().message().c_str());
    auto id = submit(dir, script.value(), config);
    QVERIFY2(id.isOk(), id.status().message().c_str());
    auto stepCheckpoint = [&] {
      for (const auto& c :
           test::eventsOf<proto::CheckpointEvent>(test::readEvents(QString::fromStdString(dir)))) {
        if (c.kind == proto::CheckpointKind::kStep) return true;
      }
      return false;
    };
    QTRY_VERIFY2_WITH_TIMEOUT(stepCheckpoint(), log(dir, id.value()).c_str(), kWaitMs);
    QVERIFY2(!finished(dir).has_value(), "the run ended before it could be requeued: make it longer");
    QVERIFY(jobs_->requeue(id.value()).isOk());
    QTRY_VERIFY2_WITH_TIMEOUT(finished(dir).has_value(), log(dir, id.value()).c_str(), 2 * kWaitMs);
    QVERIFY2(readAll(slurmLogPath(dir, id.value())).find("restart 1") != std::string::npos,
             log(dir, id.value()).c_str());

    // Two attempts; the second starts after the newest checkpoint of the first, not from step 1.
    int attempts = 0;
    std::int64_t newestCheckpoint = 0, firstStepOfSecond = 0;
    for (const auto& e : test::readEvents(QString::fromStdString(dir))) {
      if (std::holds_alternative<proto::RunStartedEvent>(e.body)) ++attempts;
      if (const auto* c = std::get_if<proto::CheckpointEvent>(&e.body); c && attempts == 1) {
        newestCheckpoint = std::max(newestCheckpoint, c->step);
      }
      if (const auto* st = std::get_if<proto::StepEvent>(&e.body);
          st && attempts == 2 && !firstStepOfSecond) {
        firstStepOfSecond = st->step;
      }
    }
    QCOMPARE(attempts, 2);
    QVERIFY(newestCheckpoint >= 2);
    QCOMPARE(firstStepOfSecond, newestCheckpoint + 1);

    auto ref =
        submit(reference, makeSlurmScript(config, {reference, FS_TEST_FLAMINGO_TRAIN, ""}).value(), config);
    QVERIFY2(ref.isOk(), ref.status().message().c_str());
    QTRY_VERIFY2_WITH_TIMEOUT(finished(reference).has_value(), log(reference, ref.value()).c_str(), kWaitMs);

    const auto resumed = lossesByStep(dir), uninterrupted = lossesByStep(reference);
    QCOMPARE(resumed.size(), uninterrupted.size());
    QCOMPARE(static_cast<std::int64_t>(resumed.size()), finished(reference)->steps);
    for (const auto& [step, losses] : uninterrupted) {
      QVERIFY2(resumed.count(step) == 1, ("step " + std::to_string(step) + " missing").c_str());
      for (const auto& [name, loss] : losses) {
        // Bit for bit: the resumed run computed exactly what the uninterrupted one did.
        QVERIFY2(resumed.at(step).at(name) == loss,
                 ("step " + std::to_string(step) + " " + name + ": " +
                  std::to_string(resumed.at(step).at(name)) + " vs " + std::to_string(loss))
                     .c_str());
      }
    }
  }

 private:
  proto::StatusOr<std::string> submit(const std::string& dir, const std::string& script,
                                      const proto::RunConfig& config) {
    auto id = jobs_->submit(dir, script, config);
    if (id) submitted_.push_back(id.value());
    return id;
  }
  std::string runDir(const std::string& name) const { return runs_.path().toStdString() + "/" + name; }

  // The job's state as squeue shows it ("" when it is not listed).
  std::string state(const std::string& id, std::vector<SlurmJobRow>* rows = nullptr) {
    auto q = jobs_->queue({id});
    if (!q || q->empty()) return {};
    if (rows) *rows = q.value();
    return q->front().state;
  }
  std::string endedState(const std::string& id) {
    auto j = jobs_->job(id);
    return j ? j->state : std::string();
  }
  // For failure messages: the job's SLURM log and the rank log tails.
  std::string log(const std::string& dir, const std::string& id) {
    const std::string text = readAll(slurmLogPath(dir, id)) + readAll(dir + "/logs/rank-0.log");
    return "job " + id + " log:\n" + (text.size() > 4000 ? text.substr(text.size() - 4000) : text);
  }

  std::unique_ptr<fs::testing::SlurmCluster> cluster_;
  remote::LocalHost host_;
  std::unique_ptr<SlurmJobs> jobs_;
  std::vector<std::string> submitted_;
  QTemporaryDir runs_{QDir::tempPath() + QStringLiteral("/fs_slurm_runs.XXXXXX")};
};

}  // namespace fs::app::cluster

QTEST_GUILESS_MAIN(fs::app::cluster::SlurmJobsTest)
#include "slurm_jobs_test.moc"
