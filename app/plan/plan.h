// A memory plan as `flamingo-train plan --json` reports it (docs/planner.md;
// the wire record is protocol::PlanRecord), as plain values the GUI can hold
// and show.
//
// Only what the views need is kept: the topology, the model's counts, the
// layouts (units and their parameters, for the layout map), and per estimate
// (engine x policy x strategy) the per-rank figures and each unit's shard
// bytes on every rank, gathered size and step-walk peak. Sizes are bytes.
//
// NOTE [Per-rank figures of an estimate]
// The planner gives one `per_rank` object per estimate: every rank holds the
// same today (shards are padded to equal sizes). The units' `shard_bytes`
// lists are per rank, though, so rankFigures() takes each rank's parameters
// from them and moves that rank's peak by the difference; the other parts have
// no per-rank breakdown in the JSON and are the same on every rank.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <vector>

namespace fs::app {

// One rank's memory in an estimate, bytes.
struct PlanFigures {
  std::int64_t parameters = 0;
  std::int64_t gradients = 0;
  std::int64_t optimizer = 0;
  std::int64_t modelState = 0;  // parameters + gradients + optimizer
  std::int64_t gatheredPeak = 0;
  std::int64_t activations = 0;  // as the config's gradient_checkpointing says
  std::int64_t activationsWithoutCheckpointing = 0;
  std::int64_t activationsWithCheckpointing = 0;
  std::int64_t peak = 0;  // model state + gathered peak + activations
  bool operator==(const PlanFigures&) const = default;
};

// One wrap unit of an estimate.
struct PlanUnitShards {
  QString path;                          // module path; "" = the root unit
  std::vector<std::int64_t> shardBytes;  // bytes held by each rank, rank order
  std::int64_t paddingElems = 0;
  std::int64_t gatheredBytes = 0;  // unsharded (0 in plans written before the field)
  std::int64_t peakBytes = 0;      // its largest step-walk moment (gathered + activations)
  QString peakPhase;               // "forward" | "backward"; "" when the plan does not say
  bool operator==(const PlanUnitShards&) const = default;
};

// One parameter of a unit in a layout.
struct PlanParam {
  QString name;
  std::int64_t numel = 0;  // 0 with bytes 0: the plan gives names only
  std::int64_t bytes = 0;  // storage bytes
  bool trainable = false;
  bool operator==(const PlanParam&) const = default;
};

// One wrap unit of a layout (a policy's, or the reference's).
struct PlanUnit {
  QString path;  // "" = the root unit
  QString moduleType;
  QString dtype;
  std::int64_t paramCount = 0;
  std::int64_t frozenParams = 0;
  std::int64_t unfrozenParams = 0;  // reference: frozen elements FSDP1 still gives gradients
  bool trainable = false;
  bool inBackward = true;
  int gatherOrder = 0;
  std::vector<PlanParam> params;
  QStringList aliases;     // tied names resolved into this unit
  QStringList mergedFrom;  // units the tie rule folded into this one
  bool operator==(const PlanUnit&) const = default;
};

struct PlanLayout {
  QString policy;               // a wrap policy, or "reference_fsdp1"
  std::vector<PlanUnit> units;  // gather order
  bool operator==(const PlanLayout&) const = default;
};

struct PlanEstimate {
  QString engine;    // "ours" | "reference"
  QString policy;    // openflamingo | transformer_layer | size_based | custom
  QString strategy;  // full_shard | shard_grad_op | hybrid_shard | no_shard | single | ddp
  int shardGroupSize = 0;
  PlanFigures perRank;
  std::vector<PlanUnitShards> units;  // gather order
  int layout = -1;                    // index into Plan::layouts
  int peakUnit = -1;                  // unit run at the step's highest moment; -1 at the head or unknown
  QString peakPhase;                  // forward | head_forward | head_backward | backward
  bool operator==(const PlanEstimate&) const = default;

  // "hybrid_shard / openflamingo", with " (reference)" for the reference's FSDP1.
  QString label() const;
};

struct Plan {
  int world = 0;
  int nodes = 0;
  QString family;  // the LM family
  std::int64_t params = 0;
  std::int64_t trainableParams = 0;
  std::vector<PlanEstimate> estimates;  // engine x policy x strategy, the CLI's order
  std::vector<PlanLayout> layouts;      // ours per policy, then the reference's
  QStringList notes;
  bool operator==(const Plan&) const = default;
};

// Each rank's figures (NOTE [Per-rank figures of an estimate]); `world` entries.
std::vector<PlanFigures> rankFigures(const PlanEstimate& estimate, int world);

// What went wrong, as a value: the kind for code, the message for people.
enum class PlanErrorKind {
  kEngineNotFound,  // no flamingo-train: the message names every place looked at
  kConfig,          // the config could not be written or read before the run
  kStart,           // the process could not be started
  kExit,            // non-zero exit: the message is the engine's stderr
  kCrash,           // killed by a signal
  kBadOutput,       // stdout is not a plan: the message names the field
};
struct PlanError {
  PlanErrorKind kind = PlanErrorKind::kExit;
  QString message;
  bool operator==(const PlanError&) const = default;
};

}  // namespace fs::app

Q_DECLARE_METATYPE(fs::app::Plan)
Q_DECLARE_METATYPE(fs::app::PlanError)
