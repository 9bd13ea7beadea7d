// launch: the node agent (backend/launch/node_agent.h) with torchrun's flags, and
// --print-env, which shows the world a rank would discover (backend/launch/world_env.h).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>
#include <ostream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/cli/world_flags.h"
#include "backend/launch/node_agent.h"
#include "backend/launch/world_env.h"

namespace fs::cli {
namespace {

const char* const kUsage =
    "usage: flamingo-train launch [--nnodes N] [--nproc-per-node P] [--node-rank R] [--master-addr HOST]\n"
    "                             [--master-port PORT] --run-dir DIR [options] -- COMMAND [ARG]...\n"
    "       flamingo-train launch --print-env [--rank R] [--world-size W] [--local-rank L] ...\n";

const char* const kHelp =
    "\nThe node agent: run it once per node, like torchrun. It starts P ranks of COMMAND on this node,\n"
    "each with RANK = node_rank * P + local rank, LOCAL_RANK, WORLD_SIZE = N * P, LOCAL_WORLD_SIZE = P,\n"
    "GROUP_RANK = NODE_RANK = node_rank, MASTER_ADDR and MASTER_PORT set (the rest of the environment\n"
    "is inherited), and records them in DIR/agent-<node>.jsonl (spawned, exited with code or signal,\n"
    "signals forwarded; docs/run-directory.md).\n\n"
    "COMMAND is a flamingo-train subcommand (train, demo, replay; optionally preceded by the word\n"
    "flamingo-train), run by this same executable with --run-dir DIR added unless given, or any\n"
    "program with its arguments. The command is passed on as it is: a config with pipe: shard\n"
    "commands needs --allow-pipe in it (`-- train --config run.yaml --allow-pipe`).\n\n"
    "Stopping: SIGTERM, SIGINT or SIGHUP to the agent is forwarded once to every rank (SIGHUP as\n"
    "SIGTERM); ranks checkpoint and exit; SIGKILL follows after --stop-grace-s. A second SIGINT kills\n"
    "every rank at once. When a rank exits non-zero or by a signal, the agent stops the others the\n"
    "same way and exits 1, printing which rank failed and how; with --max-restarts N it then starts\n"
    "every rank again, up to N times (the engine resumes from the newest complete step checkpoint;\n"
    "ranks see TORCHELASTIC_RESTART_COUNT and FLAMINGO_RESTART_REASON). Ranks die with the agent even when "
    "it\n"
    "is killed (they receive SIGTERM). Exit 0 when every rank exited 0; 2 for bad options.\n\n"
    "torchrun's spellings with underscores (--nproc_per_node, --node_rank, --master_addr, ...) work too.\n\n"
    "--print-env prints, as JSON, the world this process would discover from its environment (RANK,\n"
    "SLURM_PROCID, PMI_RANK, OMPI_COMM_WORLD_RANK, ..., MASTER_ADDR or SLURM's first node), or says\n"
    "which variables contradict each other. --rank, --world-size, --local-rank, --local-world-size,\n"
    "--master-addr and --master-port add flags, which must agree with the environment. Run it under\n"
    "a launcher, e.g.\n"
    "  srun -N2 -n8 flamingo-train launch --print-env\n\n"
    "examples:\n"
    "  flamingo-train launch --nproc-per-node 4 --run-dir runs/a -- train --config run.yaml\n"
    "  flamingo-train launch --nnodes 2 --node-rank 1 --master-addr node-a --nproc-per-node 8 \\\n"
    "      --run-dir /shared/runs/a -- train --config run.yaml\n\n";

std::vector<OptionSpec> launchOptions() {
  std::vector<OptionSpec> options = {
      {"nnodes", true, false, "N", "Nodes in the run (default 1)"},
      {"nproc-per-node", true, false, "P", "Ranks on this node (default 1)"},
      {"node-rank", true, false, "R", "This node's rank, 0..N-1 (default 0)"},
      {"master-addr", true, false, "HOST", "Rank 0's host, reachable from every node (default 127.0.0.1)"},
      {"master-port", true, false, "PORT", "Rank 0's rendezvous port (default 29500)"},
      {"run-dir", true, false, "DIR", "Run directory (required; created when missing)"},
      {"stop-grace-s", true, false, "S", "Seconds from SIGTERM to SIGKILL when stopping ranks (default 30)"},
      {"max-restarts", true, false, "N", "Times to start every rank again after a failure (default 0)"},
      {"node-name", true, false, "NAME", "Names DIR/agent-NAME.jsonl (default: this host's name)"},
      {"print-env", false, false, "", "Print the discovered world as JSON and exit (see below)"},
  };
  for (auto& o : worldFlagOptions()) {
    o.help[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(o.help[0])));
    o.help = "With --print-env: " + o.help;
    options.push_back(std::move(o));
  }
  options.push_back({"help", false, false, "", "Show this help"});
  return options;
}

// "--nproc_per_node=4" -> "--nproc-per-node=4": torchrun's spellings.
std::string dashed(std::string arg) {
  if (!arg.starts_with("--")) return arg;
  for (std::size_t i = 2; i < arg.size() && arg[i] != '='; ++i) {
    if (arg[i] == '_') arg[i] = '-';
  }
  return arg;
}

protocol::Status readInt(const ParsedArgs& a, const char* name, std::int64_t* out) {
  if (!a.has(name)) return protocol::Status::ok();
  const std::string text = a.get(name);
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
    return protocol::Status::invalidArgument("--" + std::string(name) + " '" + text +
                                             "' is not a whole number");
  }
  return protocol::Status::ok();
}

nlohmann::json worldJson(const launch::WorldInfo& w) {
  return {{"rank", w.rank},
          {"local_rank", w.localRank},
          {"world_size", w.worldSize},
          {"local_world_size", w.localWorldSize},
          {"node_rank", w.nodeRank},
          {"master_addr", w.masterAddr},
          {"master_port", w.masterPort},
          {"source", w.source},
          {"host", w.host}};
}

int printEnv(const ParsedArgs& parsed, Io& io) {
  auto flags = worldFlagsFrom(parsed);
  if (!flags) {
    io.err << "flamingo-train launch: " << flags.status().message() << "\n" << kUsage;
    return kExitUsage;
  }
  auto world = launch::discoverWorld(launch::currentEnvironment(), flags.value());
  if (!world) {
    io.err << "flamingo-train launch --print-env: " << world.status().message() << "\n";
    return kExitFailure;
  }
  io.out << worldJson(world.value()).dump(2) << "\n";
  return kExitOk;
}

}  // namespace

const std::vector<OptionSpec> kLaunchOptions = launchOptions();

int runLaunch(const std::vector<std::string>& args, Io& io) {
  auto split = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> optionArgs;
  for (auto it = args.begin(); it != split; ++it) optionArgs.push_back(dashed(*it));
  auto usageError = [&](const std::string& what) {
    io.err << "flamingo-train launch: " << what << "\n" << kUsage;
    return kExitUsage;
  };
  auto parsed = parseArgs(optionArgs, kLaunchOptions);
  if (!parsed) return usageError(parsed.status().message());
  if (parsed->has("help")) {
    io.out << kUsage << kHelp << formatOptions(kLaunchOptions);
    return kExitOk;
  }
  if (!parsed->positionals.empty()) {
    return usageError("unexpected argument '" + parsed->positionals[0] +
                      "': the rank command goes after '--'");
  }
  std::vector<std::string> command(split == args.end() ? args.end() : split + 1, args.end());
  if (parsed->has("print-env")) {
    if (!command.empty()) return usageError("--print-env takes no command");
    return printEnv(parsed.value(), io);
  }
  for (const auto& o : worldFlagOptions()) {
    if (parsed->has(o.name)) return usageError("--" + o.name + " is only for --print-env");
  }

  launch::NodeAgentOptions agent;
  agent.command = std::move(command);
  agent.runDir = parsed->get("run-dir");
  agent.masterAddr = parsed->get("master-addr", agent.masterAddr);
  agent.nodeName = parsed->get("node-name");
  for (auto [name, slot] :
       {std::pair{"nnodes", &agent.nnodes}, std::pair{"nproc-per-node", &agent.nprocPerNode},
        std::pair{"node-rank", &agent.nodeRank}, std::pair{"master-port", &agent.masterPort},
        std::pair{"max-restarts", &agent.maxRestarts}}) {
    if (auto s = readInt(parsed.value(), name, slot); !s) return usageError(s.message());
  }
  if (parsed->has("stop-grace-s")) {
    const std::string text = parsed->get("stop-grace-s");
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), agent.stopGraceS);
    if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
      return usageError("--stop-grace-s '" + text + "' is not a number of seconds");
    }
  }
  if (auto valid = launch::validateAgentOptions(agent); !valid) return usageError(valid.message());

  auto result = launch::runNodeAgent(agent, io.err);
  if (!result) {
    io.err << "flamingo-train launch: " << result.status().message() << "\n";
    return kExitFailure;
  }
  return result->exitCode;
}

}  // namespace fs::cli
