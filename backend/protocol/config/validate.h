// Validation of a RunConfig: every problem at once.
//
// Field rules (type, range, choices, required) come from the schema; the
// cross-field rules live in validate.cpp, each with a message that names the
// field path and the bad value, and a suggested fix. Warnings do not block a
// run; errors do. Checks only the config itself: no file or network access.
#pragma once

#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/problem.h"

namespace fs::protocol {

std::vector<Problem> validateConfig(const RunConfig& config);

}  // namespace fs::protocol
