// PlanRunner on the real flamingo-train: its plan equals the CLI's own JSON,
// the CLI's errors come through, cancel kills (and reaps) the child.
#include "app/plan/plan_runner.h"

#include <QJsonArray>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "plan_test_util.h"

using namespace fs::app;

namespace {

constexpr int kWaitMs = 60000;

PlanRequest tinyRequest(int world, int nodes) {
  PlanRequest r;
  r.config = test::tinyPreset();
  r.world = world;
  r.nodes = nodes;
  return r;
}

}  // namespace

class PlanRunnerTest : public QObject {
  Q_OBJECT
 private slots:
  void planEqualsTheCliJson() {
    PlanRunner runner(test::testEngine());
    QSignalSpy planned(&runner, &PlanRunner::planned);
    QSignalSpy failed(&runner, &PlanRunner::failed);
    runner.plan(tinyRequest(4, 2));
    QVERIFY(runner.isRunning());
    QVERIFY2(planned.wait(kWaitMs),
             failed.isEmpty() ? "no result" : qPrintable(failed[0][0].value<PlanError>().message));
    QVERIFY(!runner.isRunning());
    const Plan plan = planned[0][0].value<Plan>();

    const QJsonObject cli = test::cliPlan(test::tinyPresetFile(), {"--world", "4", "--nodes", "2"});
    QCOMPARE(plan.world, 4);
    QCOMPARE(plan.nodes, 2);
    QCOMPARE(plan.params, cli["model"]["params"].toInteger());
    const QJsonArray estimates = cli["estimates"].toArray();
    QCOMPARE(plan.estimates.size(), size_t(estimates.size()));
    QVERIFY(plan.estimates.size() >= 12);
    for (qsizetype i = 0; i < estimates.size(); ++i) {
      const QJsonObject e = estimates[i].toObject();
      const PlanEstimate& mine = plan.estimates[size_t(i)];
      QCOMPARE(mine.engine, e["engine"].toString());
      QCOMPARE(mine.policy, e["policy"].toString());
      QCOMPARE(mine.strategy, e["strategy"].toString());
      QCOMPARE(mine.shardGroupSize, e["shard_group_size"].toInt());
      const QJsonObject r = e["per_rank"].toObject();
      QCOMPARE(mine.perRank.parameters, r["parameters"].toInteger());
      QCOMPARE(mine.perRank.gradients, r["gradients"].toInteger());
      QCOMPARE(mine.perRank.optimizer, r["optimizer"].toInteger());
      QCOMPARE(mine.perRank.gatheredPeak, r["gathered_peak"].toInteger());
      QCOMPARE(mine.perRank.activationsWithCheckpointing, r["activations_with_checkpointing"].toInteger());
      QCOMPARE(mine.perRank.activationsWithoutCheckpointing,
               r["activations_without_checkpointing"].toInteger());
      QCOMPARE(mine.perRank.peak, r["peak"].toInteger());
      const QJsonArray units = e["units"].toArray();
      QCOMPARE(mine.units.size(), size_t(units.size()));
      for (qsizetype u = 0; u < units.size(); ++u) {
        const QJsonArray bytes = units[u]["shard_bytes"].toArray();
        QCOMPARE(mine.units[size_t(u)].shardBytes.size(), size_t(4));
        for (int rank = 0; rank < 4; ++rank)
          QCOMPARE(mine.units[size_t(u)].shardBytes[size_t(rank)], bytes[rank].toInteger());
      }
      for (const PlanFigures& f : rankFigures(mine, 4)) QCOMPARE(f, mine.perRank);  // equal shards today
    }
  }

  void runChoicePlansWhatTheConfigRuns() {
    QTemporaryDir dir;
    auto config = test::tinyPreset();
    config.parallel.mode = "fsdp";
    config.parallel.sharding_strategy = "shard_grad_op";
    config.parallel.wrap_policy = "transformer_layer";
    const QString file = dir.filePath("config.yaml");
    QVERIFY(fs::protocol::saveConfigFile(config, file.toStdString()));
    PlanRunner runner(test::testEngine());
    QSignalSpy planned(&runner, &PlanRunner::planned);
    PlanRequest r;
    r.configFile = file;
    r.world = 2;
    r.nodes = 1;
    r.runChoice = true;
    r.reference = false;
    runner.plan(r);
    QVERIFY(planned.wait(kWaitMs));
    const Plan plan = planned[0][0].value<Plan>();
    QCOMPARE(plan.estimates.size(), size_t(1));
    QCOMPARE(plan.estimates[0].engine, QStringLiteral("ours"));
    QCOMPARE(plan.estimates[0].strategy, QStringLiteral("shard_grad_op"));
    QCOMPARE(plan.estimates[0].policy, QStringLiteral("transformer_layer"));
    QCOMPARE(plan.estimates[0].shardGroupSize, 2);
  }

  // parallel.mode ddp is planned as what it runs: single on one rank, ddp on several (issue 25 item 9).
  void runChoicePlansAPlainRunAsSingleOrDdp() {
    QTemporaryDir dir;
    auto config = test::tinyPreset();
    config.parallel.mode = "ddp";
    const QString file = dir.filePath("config.yaml");
    QVERIFY(fs::protocol::saveConfigFile(config, file.toStdString()));
    QCOMPARE(runStrategy(config, 1), QStringLiteral("single"));
    QCOMPARE(runStrategy(config, 4), QStringLiteral("ddp"));
    for (const auto& [world, strategy] :
         {std::pair{1, QStringLiteral("single")}, {2, QStringLiteral("ddp")}}) {
      PlanRunner runner(test::testEngine());
      QSignalSpy planned(&runner, &PlanRunner::planned);
      PlanRequest r;
      r.configFile = file;
      r.world = world;
      r.nodes = 1;
      r.runChoice = true;
      r.reference = false;
      runner.plan(r);
      QVERIFY(planned.wait(kWaitMs));
      const Plan plan = planned[0][0].value<Plan>();
      QCOMPARE(plan.estimates.size(), size_t(1));
      QCOMPARE(plan.estimates[0].strategy, strategy);
      QCOMPARE(plan.estimates[0].shardGroupSize, 1);
      QCOMPARE(plan.estimates[0].perRank.parameters, qint64(83972 * 4));  // the whole model on every rank
    }
  }

  void aBadConfigFailsWithTheCliMessage() {
    PlanRunner runner(test::testEngine());
    QSignalSpy failed(&runner, &PlanRunner::failed);
    PlanRequest r = tinyRequest(4, 2);
    r.config->model.lm.family = "nosuch";
    runner.plan(r);
    QVERIFY(failed.wait(kWaitMs));
    const PlanError error = failed[0][0].value<PlanError>();
    QCOMPARE(error.kind, PlanErrorKind::kExit);
    QVERIFY2(error.message.contains("model.lm.family") && error.message.contains("nosuch"),
             qPrintable(error.message));
    QVERIFY(!error.message.contains("usage:"));
  }

  void badFlagsFailWithTheCliMessage() {
    PlanRunner runner(test::testEngine());
    QSignalSpy failed(&runner, &PlanRunner::failed);
    runner.plan(tinyRequest(3, 2));
    QVERIFY(failed.wait(kWaitMs));
    const QString message = failed[0][0].value<PlanError>().message;
    QVERIFY2(message.contains("--world 3 is not divisible by --nodes 2"), qPrintable(message));
  }

  void noEngineNamesWhereItLooked() {
    PlanRunner runner(EngineSearch{{}, QStringLiteral("/nonexistent/flamingo-train"), {}});
    QSignalSpy failed(&runner, &PlanRunner::failed);
    runner.plan(tinyRequest(4, 2));
    QVERIFY(failed.wait(kWaitMs));
    const PlanError error = failed[0][0].value<PlanError>();
    QCOMPARE(error.kind, PlanErrorKind::kEngineNotFound);
    QVERIFY2(error.message.contains("/nonexistent/flamingo-train"), qPrintable(error.message));
  }

  void cancelKillsAndReapsTheChild() {
    QTemporaryDir dir;
    const PlanRequest r = test::blockedRequest(dir);
    QVERIFY(!r.configFile.isEmpty());
    PlanRunner runner(test::testEngine());
    QSignalSpy started(&runner, &PlanRunner::processStarted);
    QSignalSpy cancelled(&runner, &PlanRunner::cancelled);
    QSignalSpy running(&runner, &PlanRunner::runningChanged);
    runner.plan(r);
    QVERIFY(started.wait(kWaitMs));
    const qint64 pid = started[0][0].toLongLong();
    QVERIFY(pid > 0);
    QVERIFY(test::processExists(pid));
    runner.cancel();
    QVERIFY(cancelled.wait(kWaitMs));
    QVERIFY(!test::processExists(pid));  // killed and reaped: not even a zombie
    QVERIFY(!runner.isRunning());
    QCOMPARE(running.size(), 2);
  }

  void aNewPlanSupersedesTheRunningOne() {
    QTemporaryDir dir;
    const PlanRequest blocked = test::blockedRequest(dir);
    QVERIFY(!blocked.configFile.isEmpty());
    PlanRunner runner(test::testEngine());
    QSignalSpy started(&runner, &PlanRunner::processStarted);
    QSignalSpy planned(&runner, &PlanRunner::planned);
    QSignalSpy cancelled(&runner, &PlanRunner::cancelled);
    runner.plan(blocked);
    QVERIFY(started.wait(kWaitMs));
    const qint64 pid = started[0][0].toLongLong();
    runner.plan(tinyRequest(2, 1));
    QVERIFY(planned.wait(kWaitMs));
    QCOMPARE(planned[0][0].value<Plan>().world, 2);
    QVERIFY(!test::processExists(pid));
    QVERIFY(cancelled.isEmpty());  // the old request is dropped quietly
  }

  void destroyingTheRunnerKillsTheChild() {
    QTemporaryDir dir;
    const PlanRequest r = test::blockedRequest(dir);
    QVERIFY(!r.configFile.isEmpty());
    qint64 pid = 0;
    {
      PlanRunner runner(test::testEngine());
      QSignalSpy started(&runner, &PlanRunner::processStarted);
      runner.plan(r);
      QVERIFY(started.wait(kWaitMs));
      pid = started[0][0].toLongLong();
    }
    QVERIFY(!test::processExists(pid));
  }
};

QTEST_GUILESS_MAIN(PlanRunnerTest)
#include "plan_runner_test.moc"
