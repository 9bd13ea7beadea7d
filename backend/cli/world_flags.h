// The rank-discovery flags (--rank, --world-size, --local-rank, --local-world-size,
// --master-addr, --master-port) read into launch::WorldFlags, for every subcommand that
// lets a user state or check the world (backend/launch/world_env.h).
#pragma once

#include <vector>

#include "backend/cli/args.h"
#include "backend/launch/world_env.h"

namespace fs::cli {

// Option specs for --rank, --world-size, --local-rank and --local-world-size (the
// master's two options differ in help text between commands: each declares its own).
std::vector<OptionSpec> worldFlagOptions();

// The flags present in `args`; InvalidArgument "--rank 'x' is not a whole number".
protocol::StatusOr<launch::WorldFlags> worldFlagsFrom(const ParsedArgs& args);

}  // namespace fs::cli
