// Validation of a RunConfig: every problem at once.
//
// Field rules (type, range, choices, required) come from the schema; the
// cross-field rules live in validate.cpp, each with a message that names the
// field path and the bad value, and a suggested fix. Warnings do not block a
// run; errors do.
//
// Files: with FileChecks::kNone (the default) it checks only the config
// itself, no file or network access, so the GUI thread may call it on every
// edit. FileChecks::kModelFiles also reads model.lm.path's config.json when it
// is a local directory (NOTE [LM resolution] in lm_resolver.h): what the
// engine, replay, `flamingo-train validate` and the launch preparation (a
// worker thread) check before a run.
#pragma once

#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/problem.h"

namespace fs::protocol {

enum class FileChecks { kNone, kModelFiles };

std::vector<Problem> validateConfig(const RunConfig& config, FileChecks files = FileChecks::kNone);

}  // namespace fs::protocol
