#include "backend/cli/pipe_gate.h"

#include <ostream>

#include "backend/protocol/config/pipe_commands.h"

namespace fs::cli {

OptionSpec allowPipeOption() {
  return {"allow-pipe", false, false, "",
          "Run the config's pipe:COMMAND shard sources (refused and listed without it)"};
}

bool pipeCommandsAllowed(const protocol::RunConfig& config, bool allowed, const std::string& command,
                         const std::string& configPath, Io& io) {
  if (allowed) return true;
  const auto sources = protocol::pipeSources(config);
  if (sources.empty()) return true;
  io.err << protocol::pipeRefusal("flamingo-train " + command, configPath, sources);
  return false;
}

}  // namespace fs::cli
