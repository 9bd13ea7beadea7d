// Presenting a plan: the text tables and the JSON `flamingo-train plan`
// prints (its record and codec: backend/protocol/wire/plan_record.h), and the
// `layout` telemetry event for one layout and shard plan.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "backend/fsdp_plan/plan.h"
#include "backend/protocol/wire/events.h"
#include "backend/protocol/wire/plan_record.h"

namespace fs::fsdp_plan {

using protocol::kPlanJsonSchema;

// The plan as the wire record, and that record's JSON object.
protocol::PlanRecord toPlanRecord(const Plan& plan);
nlohmann::json planToJson(const Plan& plan);

// The unit layout of `layoutIndex` sharded as `entry` says, then every
// entry's per-rank memory side by side.
std::string formatPlan(const Plan& plan, size_t layoutIndex, size_t entryIndex);

// The `layout` event (docs/telemetry.md) for one layout under one shard
// plan; max_units_gathered = parallel.limit_all_gathers.
protocol::LayoutEvent toLayoutEvent(const Layout& layout, const ShardPlan& shards, int64_t maxUnitsGathered);

// "4.15 GiB", "512.0 MiB", "96 B".
std::string formatBytes(int64_t bytes);

}  // namespace fs::fsdp_plan
