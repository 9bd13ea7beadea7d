// The memory plan `flamingo-train plan --json` prints (schema fs.plan/1;
// docs/planner.md is the spec): plain records and their one codec. The
// planner (backend/fsdp_plan/plan_report.h) fills a PlanRecord and encodes
// it; the GUI (app/plan/plan_json.h) decodes it.
//
// Sizes are bytes, counts elements. Dtypes and strategies are the planner's
// spellings ("float32", "full_shard"). Every field is written; a reader
// requires only what the GUI shows (NOTE [Plan fields a reader requires]
// in plan_record.cpp).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::protocol {

// Written as is; a reader takes "fs.plan/1" and "fs.plan/1.<minor>". 1.1: an
// estimate's strategy may also be single or ddp (parallel.mode ddp); optional
// fields for the layout map: a layout unit's param_details, an estimate unit's
// gathered_bytes / peak_bytes / peak_phase, an estimate's peak_unit / peak_phase.
inline constexpr const char* kPlanJsonSchema = "fs.plan/1.1";
inline constexpr const char* kPlanJsonMajor = "fs.plan/1";  // what a reader takes, with any minor

struct PlanPrecision {  // dtype names
  std::string weight, compute, param, reduce, frozen;
  bool operator==(const PlanPrecision&) const = default;
};

struct PlanTiedGroup {
  std::string param;
  std::vector<std::string> aliases;
  bool operator==(const PlanTiedGroup&) const = default;
};

struct PlanModel {
  std::string family;  // the LM family
  std::int64_t params = 0;
  std::int64_t trainableParams = 0;
  std::int64_t paramTensors = 0;
  std::vector<std::string> buffers;  // always empty today
  std::vector<PlanTiedGroup> tied;
  bool operator==(const PlanModel&) const = default;
};

struct PlanDatasetActivations {
  std::string name;
  std::int64_t batch = 0;
  std::int64_t tokens = 0;
  std::int64_t images = 0;
  std::int64_t withoutCheckpointing = 0;
  std::int64_t withCheckpointing = 0;
  bool operator==(const PlanDatasetActivations&) const = default;
};

struct PlanActivations {
  std::int64_t withoutCheckpointing = 0;  // max over datasets
  std::int64_t withCheckpointing = 0;
  std::vector<PlanDatasetActivations> datasets;
  bool operator==(const PlanActivations&) const = default;
};

// One parameter of a unit: elements, storage bytes, whether it trains.
struct PlanParamRecord {
  std::int64_t numel = 0;
  std::int64_t bytes = 0;
  bool trainable = false;
  bool operator==(const PlanParamRecord&) const = default;
};

struct PlanLayoutUnit {
  std::string path;  // "" = the root unit
  std::string moduleType;
  std::int64_t paramCount = 0;
  std::int64_t frozenParams = 0;
  std::int64_t unfrozenParams = 0;
  bool trainable = false;
  std::string dtype;
  std::int64_t gatherOrder = 0;
  bool inBackward = true;
  std::vector<std::string> params;
  // Parallel to `params` (empty in plans written before it).
  std::vector<PlanParamRecord> paramDetails;
  std::vector<std::string> aliases;
  std::vector<std::string> mergedFrom;
  bool operator==(const PlanLayoutUnit&) const = default;
};

struct PlanLayout {
  std::string policy;
  std::vector<PlanLayoutUnit> units;  // gather order
  bool operator==(const PlanLayout&) const = default;
};

struct PlanFlatGroup {
  bool trainable = false;
  bool gradients = false;
  std::int64_t numel = 0;
  std::int64_t paddingElems = 0;
  std::int64_t shardNumel = 0;
  std::string dtype;
  std::int64_t shardBytes = 0;
  bool operator==(const PlanFlatGroup&) const = default;
};

struct PlanUnitShardsRecord {
  std::vector<std::int64_t> shardBytes;  // one per rank, rank order
  std::int64_t paddingElems = 0;
  std::vector<PlanFlatGroup> groups;
  std::int64_t gatheredBytes = 0;  // the unit unsharded (padded, in the gathered dtype)
  // Its largest moment in the step walk (gathered + activations) and where:
  // "forward" | "backward" (docs/planner.md, "Step walk").
  std::int64_t peakBytes = 0;
  std::string peakPhase;
  bool operator==(const PlanUnitShardsRecord&) const = default;
};

// One rank's memory in an estimate.
struct PlanRankFigures {
  std::int64_t parameters = 0;
  std::int64_t gradients = 0;
  std::int64_t optimizer = 0;
  std::int64_t modelState = 0;
  std::int64_t gatheredPeak = 0;
  std::int64_t activations = 0;
  std::int64_t activationsWithoutCheckpointing = 0;
  std::int64_t activationsWithCheckpointing = 0;
  std::int64_t inputs = 0;
  std::int64_t loader = 0;
  std::int64_t stepPeak = 0;
  std::int64_t peak = 0;
  bool operator==(const PlanRankFigures&) const = default;
};

struct PlanEstimateRecord {
  std::string engine;  // "ours" | "reference"
  std::string policy;
  std::string strategy;
  std::int64_t layout = 0;  // index into PlanRecord::layouts
  std::int64_t shardGroupSize = 0;
  std::vector<PlanUnitShardsRecord> units;  // parallel to the layout's units
  PlanRankFigures perRank;
  std::int64_t peakUnit = -1;  // the unit run at the step's highest moment; -1 at the head
  std::string peakPhase;       // forward | head_forward | head_backward | backward
  bool operator==(const PlanEstimateRecord&) const = default;
};

struct PlanRecord {
  std::string schema = kPlanJsonSchema;
  std::int64_t world = 0;
  std::int64_t nodes = 0;
  PlanModel model;
  PlanPrecision precision;
  PlanPrecision referencePrecision;
  PlanActivations activations;
  std::vector<PlanLayout> layouts;
  std::vector<PlanEstimateRecord> estimates;
  std::vector<std::string> notes;
  bool operator==(const PlanRecord&) const = default;
};

// The JSON object, and the text the CLI prints (two-space indent, '\n').
nlohmann::json planToJson(const PlanRecord& plan);
std::string encodePlanJson(const PlanRecord& plan);

// Errors name the field by its JSON path: Corruption "not JSON: ..." or
// "not a JSON object"; Unsupported "schema: 'fs.plan/2' is not fs.plan/1.x";
// InvalidArgument "estimates[3].per_rank.peak: missing", "world: not an
// integer", "estimates[0].layout: 5 is not an index into layouts",
// "estimates[0].units[1].shard_bytes: 3 entries for a world of 2".
StatusOr<PlanRecord> decodePlanJson(std::string_view text);

}  // namespace fs::protocol
