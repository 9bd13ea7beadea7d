#include "app/plan/plan_json.h"

#include "app/common/json_field_reader.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <QJsonValue>
#include <cmath>

namespace fs::app {
namespace {

PlanFigures readFigures(JsonFieldReader& r, const QJsonObject& o, const QString& path) {
  PlanFigures f;
  f.parameters = r.integer(o, path, "parameters");
  f.gradients = r.integer(o, path, "gradients");
  f.optimizer = r.integer(o, path, "optimizer");
  f.modelState = r.integer(o, path, "model_state");
  f.gatheredPeak = r.integer(o, path, "gathered_peak");
  f.activations = r.integer(o, path, "activations");
  f.activationsWithoutCheckpointing = r.integer(o, path, "activations_without_checkpointing");
  f.activationsWithCheckpointing = r.integer(o, path, "activations_with_checkpointing");
  f.peak = r.integer(o, path, "peak");
  return f;
}

// Unit paths come from the estimate's layout; the shards from the estimate.
std::vector<PlanUnitShards> readUnits(JsonFieldReader& r, const QJsonArray& units, const QString& path,
                                      const QJsonArray& layoutUnits, int world) {
  std::vector<PlanUnitShards> out;
  for (qsizetype u = 0; u < units.size() && !r.failed(); ++u) {
    const QString upath = JsonFieldReader::at(path, u);
    const QJsonObject unit = r.element(units, path, u);
    PlanUnitShards shards;
    shards.path = layoutUnits.at(u).toObject().value(QLatin1String("path")).toString();
    shards.paddingElems = r.integer(unit, upath, "padding_elems");
    const QJsonArray bytes = r.array(unit, upath, "shard_bytes");
    if (!r.failed() && bytes.size() != world) {
      r.fail(upath + QStringLiteral(".shard_bytes"),
             QStringLiteral("%1 entries for a world of %2").arg(bytes.size()).arg(world));
    }
    for (const QJsonValue& b : bytes) shards.shardBytes.push_back(static_cast<std::int64_t>(b.toDouble()));
    out.push_back(std::move(shards));
  }
  return out;
}

}  // namespace

PlanParse parsePlanJson(const QByteArray& json) {
  PlanParse out;
  QJsonParseError parseError;
  const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
  if (parseError.error != QJsonParseError::NoError) {
    out.error = QStringLiteral("the plan is not JSON: %1 at byte %2").arg(parseError.errorString()).arg(parseError.offset);
    return out;
  }
  if (!doc.isObject()) {
    out.error = QStringLiteral("the plan is not a JSON object");
    return out;
  }
  const QJsonObject root = doc.object();
  JsonFieldReader r;
  const QString schema = r.string(root, {}, "schema");
  // "fs.plan/1" and "fs.plan/1.2" read; "fs.plan/2" does not.
  if (!r.failed() && schema != QLatin1String(kPlanSchemaMajor) &&
      !schema.startsWith(QLatin1String(kPlanSchemaMajor) + QLatin1Char('.'))) {
    r.fail(QStringLiteral("schema"), QStringLiteral("'%1' is not %2.x").arg(schema, QLatin1String(kPlanSchemaMajor)));
  }
  Plan& plan = out.plan;
  plan.world = static_cast<int>(r.integer(root, {}, "world"));
  plan.nodes = static_cast<int>(r.integer(root, {}, "nodes"));
  const QJsonObject model = r.object(root, {}, "model");
  plan.family = r.string(model, QStringLiteral("model"), "family");
  plan.params = r.integer(model, QStringLiteral("model"), "params");
  plan.trainableParams = r.integer(model, QStringLiteral("model"), "trainable_params");
  const QJsonArray layouts = r.array(root, {}, "layouts");
  const QJsonArray estimates = r.array(root, {}, "estimates");
  for (qsizetype i = 0; i < estimates.size() && !r.failed(); ++i) {
    const QString path = JsonFieldReader::at(QStringLiteral("estimates"), i);
    const QJsonObject e = r.element(estimates, QStringLiteral("estimates"), i);
    PlanEstimate est;
    est.engine = r.string(e, path, "engine");
    est.policy = r.string(e, path, "policy");
    est.strategy = r.string(e, path, "strategy");
    est.shardGroupSize = static_cast<int>(r.integer(e, path, "shard_group_size"));
    const std::int64_t layout = r.integer(e, path, "layout");
    if (!r.failed() && (layout < 0 || layout >= layouts.size())) {
      r.fail(path + QStringLiteral(".layout"), QStringLiteral("%1 is not an index into layouts").arg(layout));
    }
    est.perRank = readFigures(r, r.object(e, path, "per_rank"), path + QStringLiteral(".per_rank"));
    const QJsonArray layoutUnits =
        layouts.at(layout).toObject().value(QLatin1String("units")).toArray();
    est.units = readUnits(r, r.array(e, path, "units"), path + QStringLiteral(".units"), layoutUnits, plan.world);
    plan.estimates.push_back(std::move(est));
  }
  for (const QJsonValue& note : root.value(QLatin1String("notes")).toArray()) plan.notes << note.toString();
  if (r.failed()) {
    out.error = QStringLiteral("the plan's JSON: %1").arg(r.error());
    out.plan = {};
  }
  return out;
}

}  // namespace fs::app
