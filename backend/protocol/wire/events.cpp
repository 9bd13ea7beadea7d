#include "backend/protocol/wire/events.h"

#include <array>
#include <chrono>
#include <utility>

#include "backend/protocol/wire/event_fields.h"
#include "backend/protocol/wire/json_fields.h"

namespace fs::protocol {

namespace {

template <class E, std::size_t N>
bool parseFrom(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view text, E* out) {
  for (const auto& [e, name] : table) {
    if (name == text) {
      *out = e;
      return true;
    }
  }
  return false;
}
template <class E, std::size_t N>
std::string_view nameIn(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [v, name] : table) {
    if (v == e) return name;
  }
  return "?";
}

constexpr std::array<std::pair<RunState, std::string_view>, 6> kRunStates = {{
    {RunState::kStarting, "starting"},
    {RunState::kRunning, "running"},
    {RunState::kPaused, "paused"},
    {RunState::kStopping, "stopping"},
    {RunState::kFinished, "finished"},
    {RunState::kFailed, "failed"},
}};
constexpr std::array<std::pair<CheckpointKind, std::string_view>, 3> kCheckpointKinds = {{
    {CheckpointKind::kEpoch, "epoch"},
    {CheckpointKind::kStep, "step"},
    {CheckpointKind::kFinal, "final"},
}};
constexpr std::array<std::pair<FinishStatus, std::string_view>, 3> kFinishStatuses = {{
    {FinishStatus::kOk, "ok"},
    {FinishStatus::kStopped, "stopped"},
    {FinishStatus::kFailed, "failed"},
}};

}  // namespace

std::string_view toString(RunState s) {
  return nameIn(kRunStates, s);
}
std::string_view toString(CheckpointKind k) {
  return nameIn(kCheckpointKinds, k);
}
std::string_view toString(FinishStatus s) {
  return nameIn(kFinishStatuses, s);
}
bool parseEnum(std::string_view text, RunState* out) {
  return parseFrom(kRunStates, text, out);
}
bool parseEnum(std::string_view text, CheckpointKind* out) {
  return parseFrom(kCheckpointKinds, text, out);
}
bool parseEnum(std::string_view text, FinishStatus* out) {
  return parseFrom(kFinishStatuses, text, out);
}
std::string_view enumChoices(RunState) {
  return "starting|running|paused|stopping|finished|failed";
}
std::string_view enumChoices(CheckpointKind) {
  return "epoch|step|final";
}
std::string_view enumChoices(FinishStatus) {
  return "ok|stopped|failed";
}
bool isTerminal(RunState s) {
  return s == RunState::kFinished || s == RunState::kFailed;
}

// ---- field lists: the one implementation of docs/telemetry.md ------------------------
// req = required (a line without it is an error naming the field), opt = may be absent.
// field<F>: name and req/opt from event_fields.h's table (NOTE [Event field tables]).

template <auto F, class V, class T>
void field(V& v, T& member) {
  constexpr FieldDecl kDecl = fieldDecl(F);
  if constexpr (kDecl.required) {
    v.req(kDecl.name.data(), member);
  } else {
    v.opt(kDecl.name.data(), member);
  }
}

template <class V>
void describe(V& v, RunStartedEvent& e) {
  v.req("run_id", e.run_id);
  v.req("engine_version", e.engine_version);
  v.req("world_size", e.world_size);
  v.req("nnodes", e.nnodes);
  v.req("hosts", e.hosts);
  v.req("config_hash", e.config_hash);
  v.req("total_steps", e.total_steps);
  v.req("steps_per_epoch", e.steps_per_epoch);
  v.req("datasets", e.datasets);
}

template <class V>
void describe(V& v, LayoutUnit& u) {
  v.req("path", u.path);
  v.req("param_count", u.param_count);
  v.req("dtype", u.dtype);
  v.req("trainable", u.trainable);
  v.opt("frozen_params", u.frozen_params);
  v.req("shard_bytes", u.shard_bytes);
  v.opt("padding_elems", u.padding_elems);
  v.req("gather_order", u.gather_order);
}
template <class V>
void describe(V& v, LayoutEvent& e) {
  v.req("units", e.units);
  v.opt("max_units_gathered", e.max_units_gathered);
}

template <class V>
void describe(V& v, GateValue& g) {
  using F = GateField;
  field<F::kLayer>(v, g.layer);
  field<F::kAttn>(v, g.attn);
  field<F::kFf>(v, g.ff);
}
template <class V>
void describe(V& v, StepEvent& e) {
  using F = StepField;
  field<F::kStep>(v, e.step);
  field<F::kEpoch>(v, e.epoch);
  field<F::kSamples>(v, e.samples);
  field<F::kTokens>(v, e.tokens);
  field<F::kLoss>(v, e.loss);
  field<F::kRankLoss>(v, e.rank_loss);
  field<F::kLr>(v, e.lr);
  field<F::kGradNorm>(v, e.grad_norm);
  field<F::kStepTime>(v, e.step_time_s);
  field<F::kDataTime>(v, e.data_time_s);
  field<F::kCommTime>(v, e.comm_time_s);
  field<F::kSamplesPerS>(v, e.samples_per_s);
  field<F::kGates>(v, e.gates);
  field<F::kSkipped>(v, e.skipped);
  field<F::kSkipReason>(v, e.skip_reason);
  field<F::kLossScale>(v, e.loss_scale);
}

template <class V>
void describe(V& v, ValidationEvent& e) {
  v.req("step", e.step);
  v.req("loss", e.loss);
  v.opt("duration_s", e.duration_s);
}

template <class V>
void describe(V& v, DevicePhaseMemory& p) {
  v.req("allocated_peak", p.allocated_peak);
  v.req("reserved_peak", p.reserved_peak);
}
template <class V>
void describe(V& v, RankMemory& m) {
  using F = RankMemoryField;
  field<F::kRank>(v, m.rank);
  field<F::kRssBytes>(v, m.rss_bytes);
  field<F::kPeakBytes>(v, m.peak_bytes);
  field<F::kParams>(v, m.params);
  field<F::kGrads>(v, m.grads);
  field<F::kOptimizer>(v, m.optimizer);
  field<F::kGathered>(v, m.gathered);
  field<F::kActivations>(v, m.activations);
  field<F::kDeviceBytes>(v, m.device_bytes);
  field<F::kDevicePeak>(v, m.device_peak);
  field<F::kGatheredUnits>(v, m.gathered_units);
  field<F::kGatheredAtPeak>(v, m.gathered_at_peak);
  field<F::kStepPeak>(v, m.step_peak);
  field<F::kDevice>(v, m.device);
  field<F::kDeviceReserved>(v, m.device_reserved);
  field<F::kDeviceReservedPeak>(v, m.device_reserved_peak);
  field<F::kDevicePhases>(v, m.device_phases);
}
template <class V>
void describe(V& v, MemoryEvent& e) {
  using F = MemoryField;
  field<F::kStep>(v, e.step);
  field<F::kRanks>(v, e.ranks);
}

template <class V>
void describe(V& v, CheckpointEvent& e) {
  v.req("step", e.step);
  v.req("epoch", e.epoch);
  v.req("path", e.path);
  v.req("bytes", e.bytes);
  v.req("kind", e.kind);
  v.req("duration_s", e.duration_s);
}

template <class V>
void describe(V& v, WarningEvent& e) {
  v.req("code", e.code);
  v.req("message", e.message);
  v.opt("rank", e.rank);
}

template <class V>
void describe(V& v, DataStatsEvent& e) {
  v.req("step", e.step);
  v.req("dropped", e.dropped);
  v.opt("accepted", e.accepted);
  v.opt("shards", e.shards);
}

template <class V>
void describe(V& v, ControlAckEvent& e) {
  v.req("control_seq", e.control_seq);
  v.req("verb", e.verb);
  v.req("ok", e.ok);
  v.opt("message", e.message);
  v.req("step", e.step);
}

template <class V>
void describe(V& v, RankCollective& r) {
  v.req("rank", r.rank);
  v.req("last_collective", r.last_collective);
  v.opt("collective_seq", r.collective_seq);
}
template <class V>
void describe(V& v, HeartbeatEvent& e) {
  v.req("step", e.step);
  v.req("state", e.state);
  v.opt("ranks", e.ranks);
}

template <class V>
void describe(V& v, StateEvent& e) {
  v.req("state", e.state);
  v.opt("reason", e.reason);
}

template <class V>
void describe(V& v, RunFinishedEvent& e) {
  v.req("status", e.status);
  v.req("steps", e.steps);
  v.opt("final_loss", e.final_loss);
  v.req("duration_s", e.duration_s);
}

template <class V>
void describe(V& v, ErrorEvent& e) {
  v.req("message", e.message);
  v.opt("rank", e.rank);
  v.opt("where", e.where);
}

template <class V>
void describe(V& v, RollbackEvent& e) {
  v.req("step", e.step);
  v.req("to_step", e.to_step);
  v.req("checkpoint", e.checkpoint);
  v.req("dataset", e.dataset);
  v.req("rule", e.rule);
  v.req("reason", e.reason);
  v.req("losses", e.losses);
  v.req("batches_skipped", e.batches_skipped);
  v.req("lr_factor", e.lr_factor);
  v.opt("lr_factor_steps", e.lr_factor_steps);
  v.req("rollbacks", e.rollbacks);
  v.req("max_rollbacks", e.max_rollbacks);
}

// ---- dispatch --------------------------------------------------------------------------

std::string_view eventType(const EventBody& body) {
  return std::visit([](const auto& b) { return std::decay_t<decltype(b)>::kType; }, body);
}

const std::vector<std::string_view>& knownEventTypes() {
  static const std::vector<std::string_view> kTypes = json_fields::variantTypeNames<EventBody>();
  return kTypes;
}

nlohmann::json bodyToJson(const EventBody& body) {
  return std::visit([](const auto& b) { return json_fields::toJson(b); }, body);
}

StatusOr<EventBody> bodyFromJson(std::string_view type, const nlohmann::json& obj) {
  if (!obj.is_object()) return Status::invalidArgument("event body is not a JSON object");
  EventBody out;
  std::string error;
  if (!json_fields::readVariant(type, obj, &out, &error)) {
    return Status::notFound("unknown event type '" + std::string(type) + "'");
  }
  if (!error.empty()) return Status::invalidArgument(std::string(type) + " event: " + error);
  return out;
}

std::int64_t unixMillisNow() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace fs::protocol
