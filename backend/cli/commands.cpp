#include "backend/cli/commands.h"

#include <ostream>

#include "backend/protocol/config/text_match.h"

namespace fs::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> list = {
#ifdef FS_HAVE_ENGINE
      {"train", "Train one rank on a run config, writing a run directory", runTrain},
      {"demo", "Train the demo preset here on generated shards (32 steps; --long: minutes)", runDemo},
      {"shards", "Shard tools: make-synthetic, inspect, validate, convert-mmc4", runShards},
      {"replay", "Replay a Python run's initial weights and batches; print losses, write final weights",
       runReplay},
#endif
      {"launch", "Node agent, like torchrun: start this node's ranks, forward signals, stop all if one dies",
       runLaunch},
      {"plan", "Plan FSDP without building the model: unit layout and per-rank memory per strategy x policy",
       runPlan},
      {"checkpoint",
       "Checkpoint tools: inspect or diff any checkpoints; consolidate a sharded one into one file",
       runCheckpoint},
      {"probe", "Pre-flight facts for the app: host (disk, cores, GPUs), clock, listen/connect (rendezvous)",
       runProbe},
      {"stream", "Follow a file from a byte offset, framed on stdout, for the app's remote follow (tail -f)",
       runStream},
      {"validate", "Check a run config: every problem at once, plus the derived figures", runValidate},
      {"show-defaults", "Print the default run config as YAML (with help comments)", runShowDefaults},
      {"import-cmdline", "Turn an OpenFlamingo torchrun/train.py command line into a run config",
       runImportCmdline},
      {"export-cmdline", "Turn a run config into an OpenFlamingo torchrun/train.py command line",
       runExportCmdline},
      {"version", "Print engine, schema and LibTorch versions (--json: one JSON object)", runVersion},
  };
  return list;
}

namespace {
void printUsage(std::ostream& os) {
  os << "usage: flamingo-train <command> [options]\n\n"
        "Flamingo Studio's training engine and tools.\n\ncommands:\n";
  for (const auto& c : commands()) {
    std::string name = "  " + c.name;
    name.resize(20, ' ');
    os << name << c.summary << "\n";
  }
  os << "\nRun 'flamingo-train <command> --help' for a command's options.\n";
}
}  // namespace

int runMain(const std::vector<std::string>& argv, Io& io) {
  if (argv.size() < 2 || argv[1] == "--help" || argv[1] == "-h" || argv[1] == "help") {
    if (argv.size() >= 3 && argv[1] == "help") return runMain({argv[0], argv[2], "--help"}, io);
    printUsage(argv.size() < 2 ? io.err : io.out);
    return argv.size() < 2 ? kExitUsage : kExitOk;
  }
  if (argv[1] == "--version") return runVersion({}, io);
  std::vector<std::string> names;
  for (const auto& c : commands()) {
    names.push_back(c.name);
    if (c.name == argv[1]) {
      return c.run(std::vector<std::string>(argv.begin() + 2, argv.end()), io);
    }
  }
  io.err << "flamingo-train: unknown command '" << argv[1] << "'" << protocol::didYouMean(argv[1], names)
         << "\nRun 'flamingo-train --help' for the list.\n";
  return kExitUsage;
}

}  // namespace fs::cli
