// The planner: for a run config and a world, the unit layout of each wrap
// policy and the per-rank memory of each strategy x policy, beside the
// reference's FSDP1 (spec section 4), without allocating the model.
// `flamingo-train plan` prints it (plan_report.h).
//
// Thread-safety: pure function over plain values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/fsdp_plan/activation_estimate.h"
#include "backend/fsdp_plan/device_estimate.h"
#include "backend/fsdp_plan/layout.h"
#include "backend/fsdp_plan/memory_estimate.h"
#include "backend/fsdp_plan/param_inventory.h"
#include "backend/fsdp_plan/precision_plan.h"
#include "backend/fsdp_plan/sharding.h"
#include "backend/protocol/config/config_types.h"

namespace fs::fsdp_plan {

struct PlanRequest {
  protocol::RunConfig config;
  Topology topology;
  std::vector<Strategy> strategies;      // empty = all
  std::vector<std::string> policies;     // empty = all that apply (custom only with wrap_patterns)
  bool reference = true;                 // also model the reference's FSDP1
  PlanDevice device = PlanDevice::kCpu;  // kCuda: also each entry's device bytes (device_estimate.h)
};

struct PlanEntry {
  std::string engine;  // "ours" | "reference"
  std::string policy;  // wrap policy, "openflamingo" for the reference
  Strategy strategy = Strategy::kFullShard;
  size_t layout = 0;  // index into Plan::layouts
  ShardPlan shards;
  RankMemory memory;
  std::optional<DeviceBytes> device;  // the peak as the CUDA caching allocator holds it; GPU mode only
};

struct Plan {
  Topology topology;
  ParamInventory inventory;
  PrecisionPlan precision;  // ours
  PrecisionPlan referencePrecision;
  ActivationEstimate activations;           // ours
  ActivationEstimate referenceActivations;  // the reference's (every position's logits)
  PlanDevice device = PlanDevice::kCpu;
  std::vector<Layout> layouts;     // ours per policy, then the reference's
  std::vector<PlanEntry> entries;  // per layout, per strategy
  std::vector<std::string> notes;  // caveats worth printing (e.g. the reference and tied heads)
};

// Errors name the flag or field: --world / --nodes, unknown strategy or
// policy, a custom pattern that matches nothing, a model shape the model
// would reject.
protocol::StatusOr<Plan> makePlan(const PlanRequest& request);

}  // namespace fs::fsdp_plan
