// parsePlanJson: a plan's fields, errors that name the JSON path; rankFigures
// where shards differ by rank; compareEstimate's rows and error.
#include "app/plan/plan_json.h"

#include <QTest>

#include "app/plan/estimate_comparison.h"

using namespace fs::app;

namespace {

// A two-rank plan with one estimate whose shards differ by rank.
QByteArray planJson(const QString& perRank = {}) {
  const QString figures =
      perRank.isEmpty()
          ? QStringLiteral(R"("parameters": 300, "gradients": 20, "optimizer": 40, "model_state": 360,
                                   "gathered_peak": 50, "activations": 90, "activations_without_checkpointing": 90,
                                   "activations_with_checkpointing": 30, "peak": 500)")
          : perRank;
  return QStringLiteral(R"({"schema": "fs.plan/1", "world": 2, "nodes": 1,
    "model": {"family": "opt", "params": 84, "trainable_params": 29, "new_field": true},
    "layouts": [{"policy": "openflamingo", "units": [{"path": ""}, {"path": "perceiver"}]}],
    "estimates": [{"engine": "ours", "policy": "openflamingo", "strategy": "full_shard", "layout": 0,
      "shard_group_size": 2, "per_rank": {%1},
      "units": [{"shard_bytes": [100, 100], "padding_elems": 0}, {"shard_bytes": [200, 180], "padding_elems": 5}]}],
    "notes": ["a note"]})")
      .arg(figures)
      .toUtf8();
}

}  // namespace

class PlanJsonTest : public QObject {
  Q_OBJECT
 private slots:
  void readsAPlan() {
    const PlanParse parse = parsePlanJson(planJson());
    QVERIFY2(parse.ok(), qPrintable(parse.error));
    const Plan& plan = parse.plan;
    QCOMPARE(plan.world, 2);
    QCOMPARE(plan.family, QStringLiteral("opt"));
    QCOMPARE(plan.estimates.size(), size_t(1));
    const PlanEstimate& e = plan.estimates[0];
    QCOMPARE(e.label(), QStringLiteral("full_shard / openflamingo"));
    QCOMPARE(e.perRank.peak, 500);
    QCOMPARE(e.units[1].path, QStringLiteral("perceiver"));
    QCOMPARE(e.units[1].paddingElems, 5);
    QCOMPARE(plan.notes, QStringList{"a note"});
  }

  void missingFieldIsNamedByPath() {
    const PlanParse parse = parsePlanJson(planJson(R"("parameters": 300)"));
    QVERIFY(!parse.ok());
    QVERIFY2(parse.error.contains("estimates[0].per_rank.gradients: missing"), qPrintable(parse.error));
  }

  void wrongTypeIsNamed() {
    QByteArray json = planJson();
    json.replace("\"world\": 2", "\"world\": \"two\"");
    const PlanParse parse = parsePlanJson(json);
    QVERIFY2(parse.error.contains("world: not an integer"), qPrintable(parse.error));
  }

  void anotherMajorVersionIsRejected() {
    QByteArray json = planJson();
    json.replace("fs.plan/1", "fs.plan/2");
    QVERIFY2(parsePlanJson(json).error.contains("schema: 'fs.plan/2'"),
             qPrintable(parsePlanJson(json).error));
    json.replace("fs.plan/2", "fs.plan/1.3");
    QVERIFY(parsePlanJson(json).ok());
  }

  void notJsonSaysWhere() { QVERIFY(parsePlanJson("flamingo-train: oops").error.contains("not JSON")); }

  void rankFiguresTakeParametersFromTheUnits() {
    const PlanEstimate e = parsePlanJson(planJson()).plan.estimates[0];
    const auto ranks = rankFigures(e, 2);
    QCOMPARE(ranks.size(), size_t(2));
    QCOMPARE(ranks[0].parameters, 300);
    QCOMPARE(ranks[0].peak, 500);
    QCOMPARE(ranks[1].parameters, 280);
    QCOMPARE(ranks[1].modelState, 340);
    QCOMPARE(ranks[1].peak, 480);
    QCOMPARE(ranks[1].gradients, 20);
  }

  void comparisonTakesTheLargestRank() {
    PlanFigures estimate;
    estimate.parameters = 110;
    estimate.gradients = 50;
    estimate.peak = 300;
    MeasuredRank a;
    a.rank = 0;
    a.latest.params = 100;
    a.peak.params = 100;
    a.peakSum = 250;
    MeasuredRank b = a;
    b.rank = 1;
    b.peak.params = 80;
    b.latest.grads = 7;
    const auto rows = compareEstimate(estimate, {a, b});
    QCOMPARE(rows.size(), size_t(6));
    QCOMPARE(rows[0].part, ComparedPart::kParameters);
    QCOMPARE(*rows[0].peak, 100);
    QCOMPARE(*rows[0].errorPercent, 10.0);
    QCOMPARE(*rows[1].latest, 7);
    QVERIFY(!rows[1].errorPercent);  // nothing measured as peak, something estimated
    QCOMPARE(*rows[5].peak, 250);
    QCOMPARE(*rows[5].errorPercent, 20.0);
    QVERIFY(!rows[5].stepPeak);
    QVERIFY(!compareEstimate(estimate, {})[0].peak);

    // Events with step_peak (schema 1.3): the peak row measures it, not the sum of the parts.
    a.latestStepPeak = 280;
    a.stepPeak = 290;
    b.latestStepPeak = 260;
    b.stepPeak = 270;
    auto withStep = compareEstimate(estimate, {a, b});
    QVERIFY(withStep[5].stepPeak);
    QVERIFY(!withStep[0].stepPeak);
    QCOMPARE(*withStep[5].latest, 280);
    QCOMPARE(*withStep[5].peak, 290);
    QCOMPARE(*withStep[5].errorPercent, 100.0 * 10 / 290);
    QCOMPARE(*withStep[0].peak, 100);  // the parts stay as they were
    // A rank without one (an older engine's events beside newer ones): the sum of the parts for all.
    b.stepPeak.reset();
    b.latestStepPeak.reset();
    withStep = compareEstimate(estimate, {a, b});
    QVERIFY(!withStep[5].stepPeak);
    QCOMPARE(*withStep[5].peak, 250);
  }
};

QTEST_GUILESS_MAIN(PlanJsonTest)
#include "plan_json_test.moc"
