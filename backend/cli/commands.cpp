#include "backend/cli/commands.h"

#include <algorithm>
#include <ostream>

#include "backend/protocol/config/text_match.h"

namespace fs::cli {

const std::vector<Command>& commands() {
  // NOTE [One command table] in commands.h: options and tools are read from here by --help, the
  // parsers and `completion bash`.
  static const std::vector<Command> list = {
#ifdef FS_HAVE_ENGINE
      {"train", "Train one rank on a run config, writing a run directory", runTrain, &kTrainOptions},
      {"demo", "Train the demo preset here on generated shards (32 steps; --long: minutes)", runDemo,
       &kDemoOptions},
#ifdef FS_HAVE_SHARD_TOOLS
      {"shards",
       "Shard tools: make-synthetic, inspect, validate, convert-mmc4",
       {},
       nullptr,
       {
           {"make-synthetic", "write LAION and MMC4 shards of generated pictures, and a tokenizer",
            &kShardsMakeSyntheticOptions, runShardsMakeSynthetic},
           {"inspect", "print one shard's samples and their problems", &kShardsInspectOptions,
            runShardsInspect},
           {"validate", "check shards with the training rules; counts per reason", &kShardsValidateOptions,
            runShardsValidate},
           {"convert-mmc4", "MMC4 documents + downloaded images -> shards", &kShardsConvertMmc4Options,
            runShardsConvertMmc4},
       }},
#else
      // Without the data codecs: listed, and says why its tools are absent (cmd_shards_absent.cpp).
      {"shards", "Shard tools: make-synthetic, inspect, validate, convert-mmc4", runShards},
#endif
      {"replay", "Replay a Python run's initial weights and batches; print losses, write final weights",
       runReplay, &kReplayOptions},
#endif
      {"launch",
       "Node agent, like torchrun: start this node's ranks, forward signals, stop all if one dies",
       runLaunch,
       &kLaunchOptions,
       {},
       /*commandAfterDoubleDash=*/true},
      {"plan", "Plan FSDP without building the model: unit layout and per-rank memory per strategy x policy",
       runPlan, &kPlanOptions},
      {"checkpoint",
       "Checkpoint tools: inspect or diff any checkpoints; consolidate a sharded one into one file",
       {},
       nullptr,
       {
           {"inspect", "what a checkpoint holds: format, sections, modules, tensors, hashes",
            &kCheckpointInspectOptions, runCheckpointInspect},
           {"diff", "what changed between two checkpoints, tensor by tensor", &kCheckpointDiffOptions,
            runCheckpointDiff},
           {"state", "training state in words: step, data position, RNG, scheduler, optimizer",
            &kCheckpointStateOptions, runCheckpointState},
           {"check", "whether a checkpoint's weights fit a run config's model (names, shapes)",
            &kCheckpointCheckOptions, runCheckpointCheck},
#ifdef FS_HAVE_ENGINE
           {"consolidate", "sharded checkpoint directory -> one full (OpenFlamingo-format) file",
            &kCheckpointConsolidateOptions, runCheckpointConsolidate},
#endif
       }},
      {"probe", "Pre-flight facts for the app: host (disk, cores, GPUs), clock, listen/connect (rendezvous)",
       runProbe, &kProbeOptions},
      {"stream", "Follow a file from a byte offset, framed on stdout, for the app's remote follow (tail -f)",
       runStream, &kStreamOptions},
      {"export",
       "Export a run's telemetry: TensorBoard event files, or one long-format CSV of every series",
       {},
       nullptr,
       {
           {"tensorboard", "a run's series and config as TensorBoard event files in OUT_DIR",
            &kExportTensorBoardOptions, runExportTensorBoard},
           {"csv", "every series of one or more runs as one long-format CSV", &kExportCsvOptions,
            runExportCsv},
       }},
      {"validate", "Check a run config: every problem at once, plus the derived figures", runValidate,
       &kValidateOptions},
      {"show-defaults", "Print the default run config as YAML (with help comments)", runShowDefaults,
       &kShowDefaultsOptions},
      {"import-cmdline", "Turn an OpenFlamingo torchrun/train.py command line into a run config",
       runImportCmdline, &kImportCmdlineOptions},
      {"export-cmdline", "Turn a run config into an OpenFlamingo torchrun/train.py command line",
       runExportCmdline, &kExportCmdlineOptions},
      {"version", "Print engine, schema and LibTorch versions (--json: one JSON object)", runVersion,
       &kVersionOptions},
      {"completion", "Print a shell completion script (bash) generated from this command table",
       runCompletion, &kCompletionOptions},
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

// `flamingo-train checkpoint <tool> ...`: the tool named by args[0], or the tool list.
int runTool(const Command& command, const std::vector<std::string>& args, Io& io) {
  const bool help = !args.empty() && (args[0] == "--help" || args[0] == "-h");
  std::vector<std::string> names;
  for (const auto& s : command.subcommands) {
    names.push_back(s.name);
    if (!args.empty() && s.name == args[0])
      return s.run(std::vector<std::string>(args.begin() + 1, args.end()), io);
  }
  auto& os = help ? io.out : io.err;
  if (!args.empty() && !help) {
    os << "flamingo-train " << command.name << ": unknown tool '" << args[0] << "'"
       << protocol::didYouMean(args[0], names) << "\n";
  }
  os << "usage: flamingo-train " << command.name << " <tool> [options]\n\n";
  std::size_t width = 0;
  for (const auto& s : command.subcommands) width = std::max(width, s.name.size());
  for (const auto& s : command.subcommands) {
    std::string name = "  " + s.name;
    name.resize(width + 5, ' ');
    os << name << s.summary << "\n";
  }
  os << "\nRun 'flamingo-train " << command.name << " <tool> --help' for a tool's options.\n";
  return help && args.size() == 1 ? kExitOk : kExitUsage;
}
}  // namespace

int runMain(const std::vector<std::string>& argv, Io& io) {
  if (argv.size() < 2 || argv[1] == "--help" || argv[1] == "-h" || argv[1] == "help") {
    if (argv.size() >= 3 && argv[1] == "help") {
      std::vector<std::string> rest(argv.begin() + 2, argv.end());
      rest.insert(rest.begin(), argv[0]);
      rest.push_back("--help");
      return runMain(rest, io);
    }
    printUsage(argv.size() < 2 ? io.err : io.out);
    return argv.size() < 2 ? kExitUsage : kExitOk;
  }
  if (argv[1] == "--version") return runVersion({}, io);
  std::vector<std::string> names;
  for (const auto& c : commands()) {
    names.push_back(c.name);
    if (c.name == argv[1]) {
      const std::vector<std::string> rest(argv.begin() + 2, argv.end());
      return c.subcommands.empty() ? c.run(rest, io) : runTool(c, rest, io);
    }
  }
  io.err << "flamingo-train: unknown command '" << argv[1] << "'" << protocol::didYouMean(argv[1], names)
         << "\nRun 'flamingo-train --help' for the list.\n";
  return kExitUsage;
}

}  // namespace fs::cli
