#include "app/plan/plan_json.h"

#include <string_view>

#include "backend/protocol/wire/plan_record.h"

namespace fs::app {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

PlanFigures figuresOf(const protocol::PlanRankFigures& f) {
  PlanFigures out;
  out.parameters = f.parameters;
  out.gradients = f.gradients;
  out.optimizer = f.optimizer;
  out.modelState = f.modelState;
  out.gatheredPeak = f.gatheredPeak;
  out.activations = f.activations;
  out.activationsWithoutCheckpointing = f.activationsWithoutCheckpointing;
  out.activationsWithCheckpointing = f.activationsWithCheckpointing;
  out.peak = f.peak;
  return out;
}

// Unit paths come from the estimate's layout; the shards from the estimate.
PlanEstimate estimateOf(const protocol::PlanEstimateRecord& e, const protocol::PlanLayout& layout) {
  PlanEstimate out;
  out.engine = qs(e.engine);
  out.policy = qs(e.policy);
  out.strategy = qs(e.strategy);
  out.shardGroupSize = static_cast<int>(e.shardGroupSize);
  out.perRank = figuresOf(e.perRank);
  for (std::size_t u = 0; u < e.units.size(); ++u) {
    PlanUnitShards shards;
    if (u < layout.units.size()) shards.path = qs(layout.units[u].path);
    shards.shardBytes = e.units[u].shardBytes;
    shards.paddingElems = e.units[u].paddingElems;
    shards.gatheredBytes = e.units[u].gatheredBytes;
    shards.peakBytes = e.units[u].peakBytes;
    shards.peakPhase = qs(e.units[u].peakPhase);
    out.units.push_back(std::move(shards));
  }
  out.layout = static_cast<int>(e.layout);
  out.peakUnit = static_cast<int>(e.peakUnit);
  out.peakPhase = qs(e.peakPhase);
  return out;
}

QStringList qsl(const std::vector<std::string>& v) {
  QStringList out;
  for (const auto& s : v) out << qs(s);
  return out;
}

PlanLayout layoutOf(const protocol::PlanLayout& l) {
  PlanLayout out;
  out.policy = qs(l.policy);
  for (const auto& u : l.units) {
    PlanUnit unit;
    unit.path = qs(u.path);
    unit.moduleType = qs(u.moduleType);
    unit.dtype = qs(u.dtype);
    unit.paramCount = u.paramCount;
    unit.frozenParams = u.frozenParams;
    unit.unfrozenParams = u.unfrozenParams;
    unit.trainable = u.trainable;
    unit.inBackward = u.inBackward;
    unit.gatherOrder = static_cast<int>(u.gatherOrder);
    for (std::size_t p = 0; p < u.params.size(); ++p) {
      PlanParam param;
      param.name = qs(u.params[p]);
      // param_details is parallel to params when present (plans before it have names only).
      if (u.paramDetails.size() == u.params.size()) {
        param.numel = u.paramDetails[p].numel;
        param.bytes = u.paramDetails[p].bytes;
        param.trainable = u.paramDetails[p].trainable;
      }
      unit.params.push_back(std::move(param));
    }
    unit.aliases = qsl(u.aliases);
    unit.mergedFrom = qsl(u.mergedFrom);
    out.units.push_back(std::move(unit));
  }
  return out;
}

}  // namespace

PlanParse parsePlanJson(const QByteArray& json) {
  PlanParse out;
  auto record =
      protocol::decodePlanJson(std::string_view(json.constData(), static_cast<std::size_t>(json.size())));
  if (!record) {
    const QString message = QString::fromStdString(record.status().message());
    out.error = record.status().code() == protocol::Status::Code::kCorruption
                    ? QStringLiteral("the plan is %1").arg(message)  // "not JSON: ...", "not a JSON object"
                    : QStringLiteral("the plan's JSON: %1").arg(message);
    return out;
  }
  const protocol::PlanRecord& r = *record;
  Plan& plan = out.plan;
  plan.world = static_cast<int>(r.world);
  plan.nodes = static_cast<int>(r.nodes);
  plan.family = qs(r.model.family);
  plan.params = r.model.params;
  plan.trainableParams = r.model.trainableParams;
  // decodePlanJson checked every estimate's layout index.
  for (const auto& e : r.estimates)
    plan.estimates.push_back(estimateOf(e, r.layouts[static_cast<std::size_t>(e.layout)]));
  for (const auto& l : r.layouts) plan.layouts.push_back(layoutOf(l));
  for (const auto& note : r.notes) plan.notes << qs(note);
  return out;
}

}  // namespace fs::app
