// checkpoint consolidate: turns a sharded checkpoint directory (NOTE [Sharded checkpoints],
// backend/checkpoint/checkpoint_sharded.h) into the one OpenFlamingo-format file
// a single process writes.
#include <map>
#include <ostream>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/cli/args.h"
#include "backend/cli/commands.h"

namespace fs::cli {

int runCheckpointConsolidate(const std::vector<std::string>& args, Io& io) {
  const std::vector<OptionSpec> specs = {{"help", false, false, "", "Show this help"}};
  auto parsed = parseArgs(args, specs);
  const bool help = parsed && parsed->has("help");
  if (!parsed || help || parsed->positionals.size() != 2) {
    auto& os = help ? io.out : io.err;
    if (!parsed) os << "flamingo-train checkpoint consolidate: " << parsed.status().message() << "\n";
    os << "usage: flamingo-train checkpoint consolidate <sharded-dir> <out.pt>\n\n"
          "Reads a sharded checkpoint (rank-<r>.pt files + index.json) and writes the full checkpoint\n"
          "file a single process writes: OpenFlamingo's layout, resumable on any world size.\n\n"
       << formatOptions(specs);
    return help ? kExitOk : kExitUsage;
  }
  const std::filesystem::path in = parsed->positionals[0], out = parsed->positionals[1];
  std::error_code ec;
  if (!std::filesystem::is_directory(in, ec)) {
    io.err << "flamingo-train checkpoint consolidate: " << in.string()
           << ": not a directory (a sharded checkpoint is one; a full checkpoint needs no consolidation)\n";
    return kExitFailure;
  }
  auto contents = engine::readCheckpoint(in);
  if (!contents) {
    io.err << "flamingo-train checkpoint consolidate: " << contents.status().message() << "\n";
    return kExitFailure;
  }
  if (protocol::Status s = engine::writeCheckpoint(out, contents.value()); !s) {
    io.err << "flamingo-train checkpoint consolidate: " << s.message() << "\n";
    return kExitFailure;
  }
  io.out << "wrote " << out.string() << ": " << contents->modelState.size()
         << " tensors, optimizer state for " << contents->optimizer.state.size() << " parameters, step "
         << contents->resume.step << "\n";
  return kExitOk;
}

}  // namespace fs::cli
