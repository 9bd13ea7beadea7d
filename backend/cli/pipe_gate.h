// The CLI's side of NOTE [Pipe approval] (backend/protocol/config/pipe_commands.h):
// a subcommand that would read a config's shards refuses a config with
// pipe: commands unless --allow-pipe was given, printing every command.
//
// Shard specs typed as arguments of `flamingo-train shards inspect|validate`
// are the user's own input and are not gated; the gate is for configs, which
// may come from anyone.
//
// Thread-safety: pure functions (writes to the given stream).
#pragma once

#include <string>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/protocol/config/config_types.h"

namespace fs::cli {

// The --allow-pipe option, for the subcommands that gate.
OptionSpec allowPipeOption();

// True when the config has no pipe: shard commands or `allowed` is set.
// Otherwise prints to io.err, naming `command` ("train") and `configPath`,
// every source and its commands in full, and how to allow them; false.
bool pipeCommandsAllowed(const protocol::RunConfig& config, bool allowed, const std::string& command,
                         const std::string& configPath, Io& io);

}  // namespace fs::cli
