// `flamingo-train plan --fit`: the run fitted to a cluster (backend/fsdp_plan/fit.h), its options and
// what --apply / --output write. Called by runPlan (cmd_plan.cpp) once the config is loaded.
#pragma once

#include <string>
#include <vector>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/protocol/config/config_types.h"

namespace fs::cli {

// The options --fit adds to `plan` (kPlanOptions includes them).
const std::vector<OptionSpec>& planFitOptions();

int runPlanFit(const ParsedArgs& args, const protocol::RunConfig& config, Io& io);

}  // namespace fs::cli
