// train / demo: run the engine on a config (demo: the demo preset on
// generated shards in a fresh run directory, with a live progress line).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <utility>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/cli/config_input.h"
#include "backend/cli/paths.h"
#include "backend/cli/pipe_gate.h"
#include "backend/cli/progress_line.h"
#include "backend/cli/world_flags.h"
#include "backend/launch/free_port.h"
#include "backend/launch/node_agent.h"
#include "backend/launch/world_env.h"
#include "backend/protocol/config/launch_env.h"
#include "backend/protocol/config/validate.h"
#include "backend/trainer/data_sources.h"
#include "backend/trainer/trainer.h"

namespace fs::cli {
namespace {

int runEngine(const protocol::RunConfig& config, const std::filesystem::path& runDir, bool strict,
              bool progressLine, const launch::WorldInfo& world, Io& io) {
  // The progress line replaces the info log on the terminal; the log file always has it.
  const auto problems = protocol::validateConfig(config, protocol::FileChecks::kModelFiles);
  printProblems("config", problems, io.err);
  if (protocol::hasErrors(problems)) return kExitFailure;
  // A build without the data codecs refuses shard data here, before the model is built.
  if (protocol::Status codecs = trainer::checkDataCodecs(config); !codecs) {
    io.err << "flamingo-train: " << codecs.message() << "\n";
    return kExitFailure;
  }
  trainer::TrainerOptions options;
  options.rank = world.rank;
  options.world = world.worldSize;
  options.localWorld = world.localWorldSize;
  options.masterAddr = world.masterAddr;
  options.masterPort = world.masterPort;
  options.host = world.host;
  // NOTE [The step progress line]: drawn only on a terminal (a pipe or a log gets the
  // info log on stderr instead, never one line per step); rate and ETA come from the
  // wall time since the first step reported, so start-up does not skew them.
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  progressLine = progressLine && world.rank == 0 && tty;
  options.strict = strict;
  // On a terminal the other ranks mirror warnings only (their info lines stay in
  // logs/rank-N.log): their step lines would scroll rank 0's progress line away.
  options.logInfoToStderr = !progressLine && (world.rank == 0 || !tty);
  if (progressLine) {
    options.onProgress = [&io, first = -1.0, firstStep = int64_t{0}](const trainer::Progress& p) mutable {
      const double now = ProgressLine::steadySeconds();
      if (first < 0) {
        first = now - p.stepTimeS;
        firstStep = p.step - 1;
      }
      std::string losses;
      for (const auto& [name, l] : p.loss) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "  %s %.4f", name.c_str(), l);
        losses += buf;
      }
      const int64_t done = p.step - firstStep;
      const double perStep = done > 0 ? (now - first) / static_cast<double>(done) : p.stepTimeS;
      const double etaS = perStep * static_cast<double>(std::max<int64_t>(0, p.totalSteps - p.step));
      char line[320];
      std::snprintf(line, sizeof line,
                    "step %lld/%lld  epoch %lld%s  lr %.2e  %.0f samples/s  %.2f s/step  ETA %s",
                    static_cast<long long>(p.step), static_cast<long long>(p.totalSteps),
                    static_cast<long long>(p.epoch), losses.c_str(), p.lr, p.samplesPerS, perStep,
                    ProgressLine::formatDuration(etaS).c_str());
      io.out << "\r" << line << "\x1b[K" << std::flush;
    };
  }
  if (world.rank == 0) io.out << "run directory: " << runDir.string() << "\n" << std::flush;
  auto outcome = trainer::runTraining(config, runDir, options);
  if (progressLine) io.out << "\n";
  if (!outcome) {
    io.err << "flamingo-train: " << outcome.status().message() << "\n";
    return kExitFailure;
  }
  switch (outcome.value()) {
    case trainer::TrainOutcome::kFinished:
      io.out << "finished: " << runDir.string() << "\n";
      return kExitOk;
    case trainer::TrainOutcome::kStopped:
      io.out << "stopped after a checkpoint: " << runDir.string() << "\n";
      return kExitOk;
    case trainer::TrainOutcome::kKilled:
      io.err << "killed: no checkpoint written\n";
      return kExitFailure;
  }
  return kExitFailure;
}

}  // namespace

const std::vector<OptionSpec> kTrainOptions = [] {
  std::vector<OptionSpec> options = {
      {"config", true, false, "FILE", "Run config (YAML)", "c"},
      {"set", true, true, "KEY=VALUE", "Override a config field"},
      {"run-dir", true, false, "DIR",
       "Run directory (default: <run_root>/<name>); an existing one is resumed"},
      {"strict", false, false, "", "Treat gradient-flow problems after the first step as errors"},
      {"master-addr", true, false, "HOST", "Rank 0's host (default: MASTER_ADDR, or SLURM's first node)"},
      {"master-port", true, false, "PORT", "Rendezvous port (default: MASTER_PORT or 29500)"},
      {"progress", false, false, "", "Print a progress line per step"},
      allowPipeOption(),
      {"help", false, false, "", "Show this help"},
  };
  for (auto& o : worldFlagOptions()) options.push_back(o);
  return options;
}();

int runTrain(const std::vector<std::string>& args, Io& io) {
  const std::string usage =
      "usage: flamingo-train train --config FILE [--set KEY=VALUE]... [--run-dir DIR]\n";
  auto parsed = parseArgs(args, kTrainOptions);
  if (!parsed) {
    io.err << "flamingo-train train: " << parsed.status().message() << "\n" << usage;
    return kExitUsage;
  }
  if (parsed->has("help")) {
    io.out
        << usage
        << "\nTrains one rank. Writes config.yaml, run.json, events.jsonl, logs/ and checkpoints into the "
           "run\n"
           "directory and resumes from its newest complete checkpoint. SIGTERM or a 'stop' control file:\n"
           "checkpoint, then exit 0. SIGINT: the same; a second SIGINT kills.\n\n"
           "Several ranks: start one process per rank with torchrun's variables (RANK, WORLD_SIZE,\n"
           "LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), under SLURM (srun), PMI or Open MPI,\n"
           "or with the flags below; `flamingo-train launch` starts them for you.\n\n"
           "A config whose shards are read with pipe:COMMAND runs those commands with /bin/sh -c; it is\n"
           "refused, with every command listed, unless --allow-pipe is given.\n\n"
        << formatOptions(kTrainOptions);
    return kExitOk;
  }
  if (!parsed->has("config") || !parsed->positionals.empty()) {
    io.err << "flamingo-train train: --config FILE is required\n" << usage;
    return kExitUsage;
  }
  auto flags = worldFlagsFrom(parsed.value());
  if (!flags) {
    io.err << "flamingo-train train: " << flags.status().message() << "\n" << usage;
    return kExitUsage;
  }
  auto world = launch::discoverWorld(launch::currentEnvironment(), flags.value());
  if (!world) {
    io.err << "flamingo-train train: " << world.status().message() << "\n";
    return kExitFailure;
  }
  auto config = loadRunConfig(parsed->get("config"), parsed->all("set"), io);
  if (!config) return kExitFailure;
  if (!pipeCommandsAllowed(*config, parsed->has("allow-pipe"), "train", parsed->get("config"), io))
    return kExitUsage;
  // NOTE [Launch environment]: the launcher sets launch.env before this process starts (a library
  // reads such variables as it loads); a rank without them may compute other numbers, so say so.
  for (const auto& difference :
       protocol::launchEnvDifferences(config->launch, launch::currentEnvironment())) {
    io.err << "flamingo-train train: warning: " << difference
           << " (the launcher sets launch.env; ranks started another way, e.g. launch.kind=external, "
              "need it set where they start)\n";
  }
  const std::filesystem::path runDir = parsed->has("run-dir")
                                           ? std::filesystem::path(parsed->get("run-dir"))
                                           : std::filesystem::path(config->run_root) / config->name;
  return runEngine(*config, runDir, parsed->has("strict"), parsed->has("progress"), world.value(), io);
}

// The demo's ranks on this node: `flamingo-train demo ARGS --run-dir DIR` under the node agent.
int launchDemoRanks(const std::vector<std::string>& args, const protocol::RunConfig& config,
                    const std::filesystem::path& runDir, Io& io) {
  launch::NodeAgentOptions agent;
  agent.nnodes = 1;
  agent.nprocPerNode = config.launch.nproc_per_node;
  agent.masterPort = launch::freeLoopbackPort();
  agent.runDir = runDir;
  agent.command = {"demo"};
  for (std::size_t i = 0; i < args.size(); ++i) {  // the agent appends the run directory used
    if (args[i] == "--run-dir") {
      ++i;
    } else if (!args[i].starts_with("--run-dir=")) {
      agent.command.push_back(args[i]);
    }
  }
  auto result = launch::runNodeAgent(agent, io.err);
  if (!result) {
    io.err << "flamingo-train demo: " << result.status().message() << "\n";
    return kExitFailure;
  }
  return result->exitCode;
}

const std::vector<OptionSpec> kDemoOptions = {
    {"long", false, false, "", "The built-in default run: presets/demo-long.yaml, 2 ranks, a few minutes"},
    {"set", true, true, "KEY=VALUE", "Override a field of the preset"},
    {"run-dir", true, false, "DIR", "Run directory (default: a new one under the user's data directory)"},
    {"help", false, false, "", "Show this help"},
};

int runDemo(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kDemoOptions);
  if (!parsed || !parsed->positionals.empty()) {
    io.err << "flamingo-train demo: " << (parsed ? "takes no arguments" : parsed.status().message()) << "\n";
    return kExitUsage;
  }
  if (parsed->has("help")) {
    io.out << "usage: flamingo-train demo [--long] [--set KEY=VALUE]... [--run-dir DIR]\n\n"
              "Trains the demo preset (presets/demo.yaml: 32 steps, seconds on a CPU) on this machine,\n"
              "with a live progress line, on LAION and MMC4 shards of generated pictures that it writes\n"
              "into the run directory first. --long runs the built-in default instead\n"
              "(presets/demo-long.yaml: the same model for a few minutes on two cores, 2 ranks started\n"
              "here under FSDP full_shard), long enough to follow, pause and stop. Ctrl-C stops a run after "
              "a checkpoint; a second Ctrl-C kills it.\n"
              "Needs no network and no files of yours.\n\n"
           << formatOptions(kDemoOptions);
    return kExitOk;
  }
  const bool isLong = parsed->has("long");
  auto config = loadRunConfig(presetPath(isLong ? "demo-long" : "demo"), parsed->all("set"), io);
  if (!config) return kExitFailure;
  std::filesystem::path runDir;
  if (parsed->has("run-dir")) {
    runDir = parsed->get("run-dir");
  } else {
    runDir = timestampedRunDir(isLong ? "demo-long" : "demo");
  }
  config->run_root = runDir.parent_path().string();
  auto world = launch::discoverWorld(launch::currentEnvironment(), {});
  if (!world) {
    io.err << "flamingo-train demo: " << world.status().message() << "\n";
    return kExitFailure;
  }
  // NOTE [The demo's ranks]: a preset with several ranks (demo-long.yaml: 2 under FSDP full_shard)
  // starts them here through the node agent, as `flamingo-train launch` would; each rank runs this
  // same command in the same run directory and, finding its world in the environment, trains.
  const std::int64_t ranks = config->worldSize();
  if (ranks > 1 && world->worldSize == 1) {
    if (isLong) {
      io.out << "The built-in default run: " << ranks << " ranks under FSDP "
             << config->parallel.sharding_strategy
             << ", a few minutes on two cores. Stop it with Ctrl-C (it writes a\n"
                "checkpoint, then exits; a second Ctrl-C kills it), or follow, pause and stop it in\n"
                "flamingo-studio --follow "
             << runDir.string() << "\n"
             << std::flush;
    }
    return launchDemoRanks(args, *config, runDir, io);
  }
  if (isLong && world->rank == 0 && ranks == 1) {
    io.out << "The built-in default run: a few minutes on two cores. Stop it with Ctrl-C (it writes a\n"
              "checkpoint, then exits; a second Ctrl-C kills it), or follow, pause and stop it in\n"
              "flamingo-studio --follow RUN_DIR.\n"
           << std::flush;
  }
  return runEngine(*config, runDir, false, true, world.value(), io);
}

}  // namespace fs::cli
