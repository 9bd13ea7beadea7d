// checkpoint consolidate: turns a sharded checkpoint directory (NOTE [Sharded checkpoints],
// backend/checkpoint/checkpoint_sharded.h) into the one OpenFlamingo-format file
// a single process writes.
#include <map>
#include <ostream>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/checkpoint/checkpoint_sharded.h"
#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/cli/progress_line.h"

namespace fs::cli {

const std::vector<OptionSpec> kCheckpointConsolidateOptions = {{"help", false, false, "", "Show this help"}};

int runCheckpointConsolidate(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kCheckpointConsolidateOptions);
  const bool help = parsed && parsed->has("help");
  if (!parsed || help || parsed->positionals.size() != 2) {
    auto& os = help ? io.out : io.err;
    if (!parsed) os << "flamingo-train checkpoint consolidate: " << parsed.status().message() << "\n";
    os << "usage: flamingo-train checkpoint consolidate <sharded-dir> <out.pt>\n\n"
          "Reads a sharded checkpoint (rank-<r>.pt files + index.json) and writes the full checkpoint\n"
          "file a single process writes: OpenFlamingo's layout, resumable on any world size.\n\n"
       << formatOptions(kCheckpointConsolidateOptions);
    return help ? kExitOk : kExitUsage;
  }
  const std::filesystem::path in = parsed->positionals[0], out = parsed->positionals[1];
  std::error_code ec;
  if (!std::filesystem::is_directory(in, ec)) {
    io.err << "flamingo-train checkpoint consolidate: " << in.string()
           << ": not a directory (a sharded checkpoint is one; a full checkpoint needs no consolidation)\n";
    return kExitFailure;
  }
  ProgressLine progress(io.err, io.errIsTerminal, "consolidate", ProgressLine::Unit::kItems,
                        "flat parameters");
  auto contents = checkpoint::readShardedCheckpoint(in, [&](int64_t done, int64_t total) {
    progress.setTotal(total);
    progress.update(done, "reading " + in.filename().string());
  });
  if (!contents) {
    progress.finish();
    io.err << "flamingo-train checkpoint consolidate: " << contents.status().message() << "\n";
    return kExitFailure;
  }
  progress.show("writing " + out.string());
  const protocol::Status written = checkpoint::writeCheckpoint(out, contents.value());
  progress.finish();
  if (!written) {
    io.err << "flamingo-train checkpoint consolidate: " << written.message() << "\n";
    return kExitFailure;
  }
  io.out << "wrote " << out.string() << ": " << contents->modelState.size()
         << " tensors, optimizer state for " << contents->optimizer.state.size() << " parameters, step "
         << contents->resume.step << "\n";
  return kExitOk;
}

}  // namespace fs::cli
