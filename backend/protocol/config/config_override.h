// `--set path=value` overrides on a RunConfig.
//
// Paths use the schema's keys: model.lm.width, data.datasets[1].batch_size,
// data.datasets.1.batch_size or data.datasets.mmc4.batch_size (by name).
// Two list forms:
//   data.datasets[N].key=value with N == size appends a new element (defaults);
//   data.datasets=laion,mmc4 keeps the named elements, in that order.
// A string map takes one entry at a time, its value exactly as given
// (launch.env.OMP_NUM_THREADS=4), or whole in its text form (launch.env={A: "1"};
// launch.env= empties it). Names and values are checked by validation.
// Values are parsed with the field's type; the value must also be allowed
// (range / choices), so a bad override fails at once naming the path.
#pragma once

#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/problem.h"
#include "backend/protocol/status.h"

namespace fs::protocol {

Status applyOverride(RunConfig* config, const std::string& assignment);
// Applies all; returns one problem per failed override (the rest still apply).
std::vector<Problem> applyOverrides(RunConfig* config, const std::vector<std::string>& assignments);

}  // namespace fs::protocol
