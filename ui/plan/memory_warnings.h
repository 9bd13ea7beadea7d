// Which estimates do not fit a device, said the way a person reads it:
// "hybrid_shard / openflamingo: peak 41.2 GiB > 40.0 GiB on every rank", or
// "... on ranks 1, 3" where ranks differ (NOTE [Per-rank figures of an estimate]).
//
// Thread-safety: pure functions.
#pragma once

#include <QString>
#include <QStringList>
#include <cstdint>
#include <vector>

#include "app/plan/plan.h"

namespace fs::ui {

// Ranks of `estimate` whose peak exceeds `deviceBytes`; empty when all fit.
std::vector<int> ranksOverDevice(const app::PlanEstimate& estimate, int world, std::int64_t deviceBytes);

// One line per estimate with a rank over `deviceBytes`, in the plan's order.
QStringList memoryWarnings(const app::Plan& plan, std::int64_t deviceBytes);

}  // namespace fs::ui
