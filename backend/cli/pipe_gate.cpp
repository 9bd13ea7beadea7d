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
  // The sources may come from the file or from --set: describePipeSources names each one's field.
  io.err << "flamingo-train " << command << ": the config (" << configPath
         << " with any --set) runs shell commands to read its shards (pipe:), refused without --allow-pipe:\n"
         << protocol::describePipeSources(sources)
         << "Read them; if you trust every one, run again with --allow-pipe.\n";
  return false;
}

}  // namespace fs::cli
