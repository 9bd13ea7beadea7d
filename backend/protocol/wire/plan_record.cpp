#include "backend/protocol/wire/plan_record.h"

#include "backend/protocol/wire/json_fields.h"

namespace fs::protocol {

// ---- field lists: the one implementation of docs/planner.md's JSON ---------------------
//
// NOTE [Plan fields a reader requires]
// `req` marks what the GUI shows (the topology, the model's counts, each estimate's
// figures and shards): a plan without one is refused, naming it. Everything else is
// `lax`: always written, and read when present, so a reader takes a plan trimmed to
// what it shows (the GUI's tests hand-write such plans).

template <class V>
void describe(V& v, PlanPrecision& p) {
  v.lax("weight", p.weight);
  v.lax("compute", p.compute);
  v.lax("param", p.param);
  v.lax("reduce", p.reduce);
  v.lax("frozen", p.frozen);
}

template <class V>
void describe(V& v, PlanTiedGroup& g) {
  v.lax("param", g.param);
  v.lax("aliases", g.aliases);
}

template <class V>
void describe(V& v, PlanModel& m) {
  v.req("family", m.family);
  v.req("params", m.params);
  v.req("trainable_params", m.trainableParams);
  v.lax("param_tensors", m.paramTensors);
  v.lax("buffers", m.buffers);
  v.lax("tied", m.tied);
}

template <class V>
void describe(V& v, PlanDatasetActivations& d) {
  v.lax("name", d.name);
  v.lax("batch", d.batch);
  v.lax("tokens", d.tokens);
  v.lax("images", d.images);
  v.lax("without_checkpointing", d.withoutCheckpointing);
  v.lax("with_checkpointing", d.withCheckpointing);
}

template <class V>
void describe(V& v, PlanActivations& a) {
  v.lax("without_checkpointing", a.withoutCheckpointing);
  v.lax("with_checkpointing", a.withCheckpointing);
  v.lax("datasets", a.datasets);
}

template <class V>
void describe(V& v, PlanParamRecord& p) {
  v.lax("numel", p.numel);
  v.lax("bytes", p.bytes);
  v.lax("trainable", p.trainable);
}

template <class V>
void describe(V& v, PlanLayoutUnit& u) {
  v.lax("path", u.path);
  v.lax("module_type", u.moduleType);
  v.lax("param_count", u.paramCount);
  v.lax("frozen_params", u.frozenParams);
  v.lax("unfrozen_params", u.unfrozenParams);
  v.lax("trainable", u.trainable);
  v.lax("dtype", u.dtype);
  v.lax("gather_order", u.gatherOrder);
  v.lax("in_backward", u.inBackward);
  v.lax("params", u.params);
  v.lax("param_details", u.paramDetails);
  v.lax("aliases", u.aliases);
  v.lax("merged_from", u.mergedFrom);
}

template <class V>
void describe(V& v, PlanLayout& l) {
  v.lax("policy", l.policy);
  v.lax("units", l.units);
}

template <class V>
void describe(V& v, PlanFlatGroup& g) {
  v.lax("trainable", g.trainable);
  v.lax("gradients", g.gradients);
  v.lax("numel", g.numel);
  v.lax("padding_elems", g.paddingElems);
  v.lax("shard_numel", g.shardNumel);
  v.lax("dtype", g.dtype);
  v.lax("shard_bytes", g.shardBytes);
}

template <class V>
void describe(V& v, PlanUnitShardsRecord& u) {
  v.req("shard_bytes", u.shardBytes);
  v.req("padding_elems", u.paddingElems);
  v.lax("groups", u.groups);
  v.lax("gathered_bytes", u.gatheredBytes);
  v.lax("peak_bytes", u.peakBytes);
  v.lax("peak_phase", u.peakPhase);
}

template <class V>
void describe(V& v, PlanRankFigures& f) {
  v.req("parameters", f.parameters);
  v.req("gradients", f.gradients);
  v.req("optimizer", f.optimizer);
  v.req("model_state", f.modelState);
  v.req("gathered_peak", f.gatheredPeak);
  v.req("activations", f.activations);
  v.req("activations_without_checkpointing", f.activationsWithoutCheckpointing);
  v.req("activations_with_checkpointing", f.activationsWithCheckpointing);
  v.lax("inputs", f.inputs);
  v.lax("loader", f.loader);
  v.lax("step_peak", f.stepPeak);
  v.req("peak", f.peak);
}

template <class V>
void describe(V& v, PlanEstimateRecord& e) {
  v.req("engine", e.engine);
  v.req("policy", e.policy);
  v.req("strategy", e.strategy);
  v.req("layout", e.layout);
  v.req("shard_group_size", e.shardGroupSize);
  v.req("per_rank", e.perRank);
  v.req("units", e.units);
  v.lax("peak_unit", e.peakUnit);
  v.lax("peak_phase", e.peakPhase);
}

// Without `schema`: decodePlanJson reads and checks it first.
template <class V>
void describeBody(V& v, PlanRecord& p) {
  v.req("world", p.world);
  v.req("nodes", p.nodes);
  v.req("model", p.model);
  v.lax("precision", p.precision);
  v.lax("reference_precision", p.referencePrecision);
  v.lax("activations", p.activations);
  v.req("layouts", p.layouts);
  v.req("estimates", p.estimates);
  v.lax("notes", p.notes);
}

template <class V>
void describe(V& v, PlanRecord& p) {
  v.req("schema", p.schema);
  describeBody(v, p);
}

// ---- codec ------------------------------------------------------------------------------

nlohmann::json planToJson(const PlanRecord& plan) {
  return json_fields::toJson(plan);
}

std::string encodePlanJson(const PlanRecord& plan) {
  return planToJson(plan).dump(2) + "\n";
}

StatusOr<PlanRecord> decodePlanJson(std::string_view text) {
  using json_fields::ErrorStyle;
  using json_fields::Json;
  StatusOr<Json> parsed = json_fields::parseDocument(text);
  if (!parsed.isOk()) return parsed.status();
  const Json& root = *parsed;

  PlanRecord plan;
  std::string error;
  json_fields::JsonReader r(root, "", &error, ErrorStyle::kPathFirst);
  r.req("schema", plan.schema);
  if (!error.empty()) return Status::invalidArgument(error);
  // "fs.plan/1" and "fs.plan/1.2" read; "fs.plan/2" does not.
  const std::string major = kPlanJsonMajor;
  if (plan.schema != major && plan.schema.rfind(major + ".", 0) != 0) {
    return Status::unsupported("schema: '" + plan.schema + "' is not " + major + ".x");
  }
  describeBody(r, plan);
  if (!error.empty()) return Status::invalidArgument(error);

  for (std::size_t i = 0; i < plan.estimates.size(); ++i) {
    const auto& e = plan.estimates[i];
    const std::string path = "estimates[" + std::to_string(i) + "]";
    if (e.layout < 0 || e.layout >= static_cast<std::int64_t>(plan.layouts.size())) {
      return Status::invalidArgument(path + ".layout: " + std::to_string(e.layout) +
                                     " is not an index into layouts");
    }
    for (std::size_t u = 0; u < e.units.size(); ++u) {
      const auto n = static_cast<std::int64_t>(e.units[u].shardBytes.size());
      if (n != plan.world) {
        return Status::invalidArgument(path + ".units[" + std::to_string(u) +
                                       "].shard_bytes: " + std::to_string(n) + " entries for a world of " +
                                       std::to_string(plan.world));
      }
    }
  }
  return plan;
}

}  // namespace fs::protocol
