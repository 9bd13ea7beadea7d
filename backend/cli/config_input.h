// Loading a run config for a subcommand: the YAML file, then --set
// overrides; problems are printed to stderr prefixed with the file name.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/cli/commands.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/problem.h"

namespace fs::cli {

// nullopt after printing the problems when the file cannot be used.
// "-" reads the YAML from stdin.
std::optional<protocol::RunConfig> loadRunConfig(const std::string& path,
                                                 const std::vector<std::string>& sets, Io& io);

// "<source>: error: <path>: <message> Fix: <fix>" per line.
void printProblems(const std::string& source, const std::vector<protocol::Problem>& problems,
                   std::ostream& os);

}  // namespace fs::cli
