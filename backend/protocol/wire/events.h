// Telemetry event records: what rank 0 appends to events.jsonl, one per line.
//
// Each event is an EventHeader-like pair (seq, t) plus one typed body; the set of
// bodies is the EventBody variant. docs/telemetry.md is the normative schema (field
// names, units, which fields are required); the field lists in events.cpp are its one
// implementation, shared by the encoder and the decoder (event_codec.h).
//
// Conventions for every body:
//  - Per-dataset figures are maps keyed by dataset name (the names in run_started).
//  - Sizes are bytes, durations seconds (suffix _s), times unix milliseconds.
//  - A std::optional field is absent from the line when empty; other optional fields
//    are absent when equal to their default (0, false, "", empty list/map).
//
// Thread-safety: plain values. Ownership: everything held by value.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::protocol {

// The telemetry schema version written by this build, "MAJOR.MINOR". Readers decode
// any 1.x line (ignoring fields and types they do not know) and reject 2.0 and later.
inline constexpr int kEventSchemaMajor = 1;
inline constexpr int kEventSchemaMinor = 5;
inline constexpr std::string_view kEventSchemaVersion = "1.5";

// Lifecycle of a run; shared by the `state` event and run.json.
enum class RunState { kStarting, kRunning, kPaused, kStopping, kFinished, kFailed };
enum class CheckpointKind { kEpoch, kStep, kFinal };
enum class FinishStatus { kOk, kStopped, kFailed };

std::string_view toString(RunState s);        // "starting", "running", ...
std::string_view toString(CheckpointKind k);  // "epoch", "step", "final"
std::string_view toString(FinishStatus s);    // "ok", "stopped", "failed"
// Parse the wire spelling; false (and *out untouched) for anything else.
bool parseEnum(std::string_view text, RunState* out);
bool parseEnum(std::string_view text, CheckpointKind* out);
bool parseEnum(std::string_view text, FinishStatus* out);
// "starting|running|..." for error messages.
std::string_view enumChoices(RunState);
std::string_view enumChoices(CheckpointKind);
std::string_view enumChoices(FinishStatus);
// True for finished and failed: nothing will change any more.
bool isTerminal(RunState s);

// ---- bodies --------------------------------------------------------------------------

struct RunStartedEvent {
  static constexpr std::string_view kType = "run_started";
  std::string run_id;
  std::string engine_version;
  int world_size = 0;
  int nnodes = 0;
  std::vector<std::string> hosts;  // one per node, node rank order
  std::string config_hash;         // hex digest of config.yaml as written
  std::int64_t total_steps = 0;
  std::int64_t steps_per_epoch = 0;
  std::vector<std::string> datasets;  // dataset names, config order
  bool operator==(const RunStartedEvent&) const = default;
};

// One FSDP wrap unit.
struct LayoutUnit {
  std::string path;  // module path, e.g. "lang_encoder.gated_cross_attn_layers.3"
  std::int64_t param_count = 0;
  std::string dtype;  // parameter storage dtype, e.g. "float32", "bfloat16"
  bool trainable = false;
  std::int64_t frozen_params = 0;         // of param_count, how many do not train
  std::vector<std::int64_t> shard_bytes;  // bytes of this unit held by each rank
  std::int64_t padding_elems = 0;         // elements added to divide evenly by world
  int gather_order = 0;                   // position in the forward all-gather order
  bool operator==(const LayoutUnit&) const = default;
};
struct LayoutEvent {
  static constexpr std::string_view kType = "layout";
  std::vector<LayoutUnit> units;
  int max_units_gathered = 0;  // limit on simultaneously unsharded units (0: no limit)
  bool operator==(const LayoutEvent&) const = default;
};

// tanh of one gated cross-attention layer's gates.
struct GateValue {
  int layer = 0;
  double attn = 0;
  double ff = 0;
  bool operator==(const GateValue&) const = default;
};
struct StepEvent {
  static constexpr std::string_view kType = "step";
  std::int64_t step = 0;                                 // optimizer steps done, counting this one (1-based)
  int epoch = 0;                                         // 0-based
  std::map<std::string, std::int64_t> samples;           // cumulative samples seen, all ranks
  std::map<std::string, std::int64_t> tokens;            // cumulative tokens seen, all ranks
  std::map<std::string, double> loss;                    // this step, mean over ranks
  std::map<std::string, std::vector<double>> rank_loss;  // this step, index = rank
  double lr = 0;
  std::optional<double> grad_norm;  // absent when not computed (e.g. skipped step)
  double step_time_s = 0;
  double data_time_s = 0;  // of step_time_s, waiting for batches
  double comm_time_s = 0;  // of step_time_s, rank 0 waiting on other ranks (agreements, gradient all-reduce)
  std::map<std::string, double> samples_per_s;
  std::vector<GateValue> gates;
  bool skipped = false;              // update not applied (non-finite grads, ...)
  std::string skip_reason;           // set when skipped
  std::optional<double> loss_scale;  // loss scaling (fp16): the scale this step's backward used
  bool operator==(const StepEvent&) const = default;
};

struct ValidationEvent {
  static constexpr std::string_view kType = "validation";
  std::int64_t step = 0;
  std::map<std::string, double> loss;
  std::optional<double> duration_s;
  bool operator==(const ValidationEvent&) const = default;
};

// One phase's device memory (memory.ranks[].device_phases, since 1.4): the device allocator's
// highest allocated and reserved bytes while the phase was current (NOTE [Device memory by
// phase] in backend/telemetry/memory_tracker.h).
struct DevicePhaseMemory {
  std::int64_t allocated_peak = 0;
  std::int64_t reserved_peak = 0;
  bool operator==(const DevicePhaseMemory&) const = default;
};

struct RankMemory {
  int rank = 0;
  std::int64_t rss_bytes = 0;   // host resident set now
  std::int64_t peak_bytes = 0;  // host peak RSS since start
  std::int64_t params = 0;      // bytes of sharded parameters
  std::int64_t grads = 0;
  std::int64_t optimizer = 0;
  std::int64_t gathered = 0;                 // bytes of unsharded (all-gathered) parameters at peak
  std::int64_t activations = 0;              // bytes of saved activations at peak
  std::optional<std::int64_t> device_bytes;  // accelerator allocated now; absent on CPU
  std::optional<std::int64_t> device_peak;   // accelerator allocated, peak since the last report
  std::optional<int>
      gathered_units;  // FSDP: most units unsharded (or being gathered) at once since the last report
  // FSDP: the units gathered together when gathered_units was first reached, as gather_order values of the
  // layout event's units, ascending (as many as gathered_units; empty when none was gathered). Since 1.2.
  std::vector<int> gathered_at_peak;
  // The highest live tracked CPU tensor bytes of the step this event reports, from the end of the previous
  // step to the end of this one (every storage: model state, batches, activations, temporaries); the
  // planner's `peak` is held to it. Absent for the first step after start or resume (its interval holds the
  // set-up) and when the memory tracker is off. Since 1.3.
  std::optional<std::int64_t> step_peak;
  // Since 1.4, on an accelerator only (absent on CPU): the rank's device ("cuda:0"), its caching
  // allocator's reserved bytes now and at their peak since the last report (device_bytes and
  // device_peak are the allocated ones), and per phase ("parameters", "gradients", ...; only the
  // phases current at some moment since the last report) the peaks within that phase.
  std::string device;
  std::optional<std::int64_t> device_reserved;
  std::optional<std::int64_t> device_reserved_peak;
  std::map<std::string, DevicePhaseMemory> device_phases;
  bool operator==(const RankMemory&) const = default;
};
struct MemoryEvent {
  static constexpr std::string_view kType = "memory";
  std::int64_t step = 0;
  std::vector<RankMemory> ranks;
  bool operator==(const MemoryEvent&) const = default;
};

struct CheckpointEvent {
  static constexpr std::string_view kType = "checkpoint";
  std::int64_t step = 0;
  int epoch = 0;
  std::string path;  // relative to the run directory when inside it
  std::int64_t bytes = 0;
  CheckpointKind kind = CheckpointKind::kEpoch;
  double duration_s = 0;
  bool operator==(const CheckpointEvent&) const = default;
};

struct WarningEvent {
  static constexpr std::string_view kType = "warning";
  std::string code;  // stable machine-readable id, e.g. "telemetry_dropped"
  std::string message;
  std::optional<int> rank;
  bool operator==(const WarningEvent&) const = default;
};

struct DataStatsEvent {
  static constexpr std::string_view kType = "data_stats";
  std::int64_t step = 0;
  // dataset -> reason -> samples dropped since start, e.g. {"mmc4": {"no_images": 12}}
  std::map<std::string, std::map<std::string, std::int64_t>> dropped;
  // dataset -> samples accepted since start (the denominator of the drop rate)
  std::map<std::string, std::int64_t> accepted;
  // dataset -> shard -> reason -> samples dropped since start (shards with drops only)
  std::map<std::string, std::map<std::string, std::map<std::string, std::int64_t>>> shards;
  bool operator==(const DataStatsEvent&) const = default;
};

struct ControlAckEvent {
  static constexpr std::string_view kType = "control_ack";
  std::uint64_t control_seq = 0;  // seq of control/<seq>-<verb>.json
  std::string verb;
  bool ok = false;
  std::string message;
  std::int64_t step = 0;  // step at which every rank acted on it
  bool operator==(const ControlAckEvent&) const = default;
};

struct RankCollective {
  int rank = 0;
  std::string last_collective;      // e.g. "all_gather lang_encoder.layers.3"
  std::int64_t collective_seq = 0;  // collectives issued so far by this rank
  bool operator==(const RankCollective&) const = default;
};
struct HeartbeatEvent {
  static constexpr std::string_view kType = "heartbeat";
  std::int64_t step = 0;
  RunState state = RunState::kRunning;
  std::vector<RankCollective> ranks;  // optional: empty when not collected
  bool operator==(const HeartbeatEvent&) const = default;
};

struct StateEvent {
  static constexpr std::string_view kType = "state";
  RunState state = RunState::kStarting;
  std::string reason;  // optional, e.g. "control 3 pause"
  bool operator==(const StateEvent&) const = default;
};

struct RunFinishedEvent {
  static constexpr std::string_view kType = "run_finished";
  FinishStatus status = FinishStatus::kOk;
  std::int64_t steps = 0;
  std::map<std::string, double> final_loss;
  double duration_s = 0;
  bool operator==(const RunFinishedEvent&) const = default;
};

struct ErrorEvent {
  static constexpr std::string_view kType = "error";
  std::string message;
  std::optional<int> rank;
  std::string where;  // component or phase, e.g. "forward", "checkpoint", "data"
  bool operator==(const ErrorEvent&) const = default;
};

// Since 1.5: the loss-spike guard took the run back to an earlier step checkpoint
// (docs/telemetry.md; NOTE [Loss-spike guard] in the engine).
struct RollbackEvent {
  static constexpr std::string_view kType = "rollback";
  std::int64_t step = 0;             // the step whose loss was the spike
  std::int64_t to_step = 0;          // the step of the checkpoint the run went back to
  std::string checkpoint;            // that checkpoint, relative to the run directory when inside it
  std::string dataset;               // the dataset whose loss spiked
  std::string rule;                  // "mad" (robust z-score) or "ema" (ratio to an EMA)
  std::string reason;                // in words, with the figures, e.g. "laion loss 9.8 is 14.2 MADs ..."
  std::vector<double> losses;        // that dataset's losses over the window, the spike last
  std::int64_t batches_skipped = 0;  // batches advanced past: those that led to the spike plus the skip
  double lr_factor = 1;              // the learning-rate factor applied from the rollback on
  std::int64_t lr_factor_steps = 0;  // for this many steps
  int rollbacks = 0;                 // rollbacks in this run so far, this one included
  int max_rollbacks = 0;             // the configured limit
  bool operator==(const RollbackEvent&) const = default;
};

using EventBody = std::variant<RunStartedEvent, LayoutEvent, StepEvent, ValidationEvent, MemoryEvent,
                               CheckpointEvent, WarningEvent, DataStatsEvent, ControlAckEvent, HeartbeatEvent,
                               StateEvent, RunFinishedEvent, ErrorEvent, RollbackEvent>;

// One line of events.jsonl.
struct Event {
  std::uint64_t seq = 0;  // gap-free, from 0
  std::int64_t t = 0;     // unix milliseconds at emission
  EventBody body;
  bool operator==(const Event&) const = default;
};

// The wire `type` of a body ("step", ...).
std::string_view eventType(const EventBody& body);
// Every type this build knows, in EventBody order.
const std::vector<std::string_view>& knownEventTypes();

// Low level (event_codec.h is the interface most callers want): the body's fields as a
// JSON object, and back. bodyFromJson returns NotFound for a type it does not know and
// InvalidArgument naming the field for a missing or mistyped one.
nlohmann::json bodyToJson(const EventBody& body);
StatusOr<EventBody> bodyFromJson(std::string_view type, const nlohmann::json& obj);

// Wall clock in unix milliseconds.
std::int64_t unixMillisNow();

}  // namespace fs::protocol
