#include "backend/protocol/events.h"

#include <array>
#include <chrono>
#include <utility>

#include "backend/protocol/json_fields.h"

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
  v.req("layer", g.layer);
  v.req("attn", g.attn);
  v.req("ff", g.ff);
}
template <class V>
void describe(V& v, StepEvent& e) {
  v.req("step", e.step);
  v.req("epoch", e.epoch);
  v.opt("samples", e.samples);
  v.opt("tokens", e.tokens);
  v.req("loss", e.loss);
  v.opt("rank_loss", e.rank_loss);
  v.req("lr", e.lr);
  v.opt("grad_norm", e.grad_norm);
  v.req("step_time_s", e.step_time_s);
  v.opt("data_time_s", e.data_time_s);
  v.opt("comm_time_s", e.comm_time_s);
  v.opt("samples_per_s", e.samples_per_s);
  v.opt("gates", e.gates);
  v.opt("skipped", e.skipped);
  v.opt("skip_reason", e.skip_reason);
}

template <class V>
void describe(V& v, ValidationEvent& e) {
  v.req("step", e.step);
  v.req("loss", e.loss);
  v.opt("duration_s", e.duration_s);
}

template <class V>
void describe(V& v, RankMemory& m) {
  v.req("rank", m.rank);
  v.req("rss_bytes", m.rss_bytes);
  v.req("peak_bytes", m.peak_bytes);
  v.req("params", m.params);
  v.req("grads", m.grads);
  v.req("optimizer", m.optimizer);
  v.req("gathered", m.gathered);
  v.req("activations", m.activations);
  v.opt("device_bytes", m.device_bytes);
  v.opt("device_peak", m.device_peak);
  v.opt("gathered_units", m.gathered_units);
  v.opt("gathered_at_peak", m.gathered_at_peak);
}
template <class V>
void describe(V& v, MemoryEvent& e) {
  v.req("step", e.step);
  v.req("ranks", e.ranks);
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
