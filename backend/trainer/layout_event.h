// The layout event: the model's units as this run holds them (without FSDP
// one unit, the whole model on every rank), and each FSDP unit's place in
// that list, by which the memory event's gathered_at_peak names units.
//
// Thread-safety: reads the model; the rank's training thread.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/fsdp/sharded_model.h"
#include "backend/model/flamingo.h"
#include "backend/protocol/wire/events.h"

namespace fs::trainer {

// torch's Python spelling ("float32"), as the telemetry schema documents.
std::string dtypeName(c10::ScalarType t);

// `sharded`: null without FSDP. `maxUnitsGathered`: parallel.limit_all_gathers.
protocol::LayoutEvent layoutEvent(model::FlamingoImpl& model, const fsdp::ShardedModel* sharded,
                                  int64_t maxUnitsGathered, int64_t world);

// Each runtime unit's place in the layout event (its gather_order): the
// root first, then the units in order, those without parameters left out (-1).
std::vector<int> layoutPositions(const fsdp::ShardedModel& sharded);

// Units the layout event lists (0 without FSDP).
int layoutUnitCount(const fsdp::ShardedModel* sharded);

}  // namespace fs::trainer
