// A live run's `layout` event laid over the planner's map of the run's own
// config.yaml: the planned units (parameter names, module types, gathered
// sizes, step-walk peaks) with the shard bytes each rank reported, and every
// way the two disagree.
//
// NOTE [Plan and run disagree]
// The planner walks the model the config describes; the run reports what its
// wrapping built. They should name the same units, in the same gather order,
// with the same element counts, dtypes and per-rank shard bytes. Where they do
// not, the overlay keeps both sides visible: a planned unit the run lacks stays
// in the map (it has no shard bytes), a unit only the run has is added after the
// planned ones (with the event's leaves: trainable and frozen), and each
// disagreement is a LayoutDifference of kind kPlanAndRun, listed before the
// reference's differences so a view outlines it, never drops it.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <vector>

#include "app/plan/layout_map.h"
#include "backend/protocol/wire/events.h"

namespace fs::app {

struct LiveOverlay {
  LayoutMap map;                                // engine "live", the plan's strategy and policy
  std::vector<LayoutDifference> disagreements;  // kind kPlanAndRun, in the map's unit order
};

// `planned` (layoutMapFromPlan of our estimate for the run's config) with
// `live` laid over it (NOTE [Plan and run disagree]).
LiveOverlay overlayLiveLayout(const LayoutMap& planned, const protocol::LayoutEvent& live);

}  // namespace fs::app
