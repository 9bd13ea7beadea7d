// The node agent behind `flamingo-train launch`: one per node, like torchrun. It starts
// this node's ranks with the distributed variables set, forwards stop signals, records
// everything in <run_dir>/agent-<node>.jsonl and, when one rank dies, stops the rest.
//
// NOTE [Node agent behaviour]
//  - Ranks: local rank l gets RANK = node_rank * nproc_per_node + l, LOCAL_RANK = l,
//    WORLD_SIZE = nnodes * nproc_per_node, LOCAL_WORLD_SIZE = nproc_per_node,
//    GROUP_RANK = NODE_RANK = node_rank, MASTER_ADDR, MASTER_PORT; every other variable
//    is the agent's. Each is started as rank_process.h describes (own process group,
//    PR_SET_PDEATHSIG(SIGTERM), stdin /dev/null).
//  - The first SIGTERM, SIGINT or SIGHUP to the agent is forwarded once to every live
//    rank (SIGHUP as SIGTERM), which stop gracefully (checkpoint, exit 0); repeats of
//    SIGTERM are not forwarded again. A second SIGINT sends SIGKILL to every rank.
//  - A rank that exits non-zero or by a signal while others run: event `stopping` with
//    the reason, SIGTERM to the others, SIGKILL to those still alive after the grace
//    period. With restarts left (--max-restarts), once every rank has exited the agent
//    records `restarting` and starts every rank again (NOTE [Restarts]); otherwise it
//    exits 1 and prints the reason, naming the limit when restarts were allowed.
//  - A rank that exits 0 is done; the others go on. Exit 0 when every rank exited 0.
//  - Nothing waits without bound except for ranks that are running normally: after
//    SIGTERM, SIGKILL follows in stop_grace_s; after SIGKILL the agent waits at most
//    kKillWaitS more and then gives up on a rank it cannot reap (and says so).
//  - The event loop sleeps in poll() on the signal self-pipe (agent_signals.h); SIGCHLD
//    wakes it to reap. No busy waiting.
//
//
// NOTE [Restarts]
// As torchrun's --max-restarts, per node: an attempt ends when one of this node's ranks
// fails and every rank of it has exited; attempt k+1 starts the same command with the
// same environment plus TORCHELASTIC_RESTART_COUNT=k+1 (torchrun's name; 0 for the first),
// FLAMINGO_RESTART_REASON (why: "start", or the failed rank's exit) and, when known,
// FLAMINGO_RESTART_FAILED_MS (unix ms of the failure). The engine resumes from the newest
// complete checkpoint in the run directory by itself (checkpoint.resume_from empty), and
// its rank 0 appends the attempt to run.json (docs/run-directory.md). A signal to the
// agent (a stop) or a rank that cannot start is never restarted.
// Several nodes: there is no rendezvous between agents (torchrun's c10d store). A rank
// that dies makes the others fail on their next collective (Gloo/NCCL timeouts), so
// every node's agent sees a failure, stops its ranks and restarts them; each restart
// opens a fresh rendezvous at MASTER_ADDR:MASTER_PORT that waits for the whole world,
// so the attempts line up by themselves. Each agent counts its own restarts: a node
// whose ranks failed for a reason of their own (one bad disk) can use up its restarts
// before the others; its agent then exits 1, its peers' ranks fail again at their
// rendezvous or first collective, and those agents restart or give up in turn, so the
// run ends failed on every node within max_restarts+1 attempts of each, never hangs.
// A rank of the new attempt takes seconds to reach the rendezvous (LibTorch, the
// model); the old attempt's ranks see a dead peer's closed connections at once, so
// the old rendezvous is gone by then. A node whose ranks are still blocked in a
// collective of the old attempt keeps the new one waiting at its rendezvous until
// they fail (parallel.collective_timeout_s); if the rendezvous times out first
// (parallel.preflight_timeout_s), that attempt fails as well and costs a restart.
// run.json's reason is the failure rank 0's node saw (a peer's death shows there as
// rank 0's failed collective); each node's own is in its agent-<node>.jsonl.
//
// Thread-safety: runNodeAgent installs process-wide signal handlers for its duration and
// reaps its children by pid: call it from the main thread, one agent per process.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "backend/launch/rank_process.h"
#include "backend/protocol/status.h"

namespace fs::launch {

inline constexpr double kKillWaitS = 10;  // after SIGKILL, how long reaping may take

struct NodeAgentOptions {
  std::int64_t nnodes = 1;
  std::int64_t nprocPerNode = 1;
  std::int64_t nodeRank = 0;
  std::string masterAddr = "127.0.0.1";
  std::int64_t masterPort = 29500;
  std::filesystem::path runDir;                      // required; created when missing
  double stopGraceS = 30;                            // SIGTERM -> SIGKILL
  std::int64_t maxRestarts = 0;                      // torchrun --max-restarts: attempts after the first
  std::string nodeName;                              // names agent-<node>.jsonl; empty: this host's name
  std::vector<std::string> command;                  // what every rank runs; see resolveRankCommand
  std::filesystem::path selfExe = "/proc/self/exe";  // flamingo-train itself
};

// InvalidArgument naming the option ("--node-rank 2 is not below --nnodes 2").
protocol::Status validateAgentOptions(const NodeAgentOptions& options);

// The program and argv of every rank. When the command starts with a flamingo-train
// subcommand (train, demo, replay), optionally after a word "flamingo-train", the
// program is this executable (selfExe, resolved) and "--run-dir <run_dir>" is appended
// unless the arguments name one; otherwise the first word is a program (PATH searched
// when it has no '/'), run with the remaining words.
protocol::StatusOr<RankCommand> resolveRankCommand(const NodeAgentOptions& options,
                                                   const std::string& path_var);

// `base` plus the variables of local rank `local_rank` (NOTE [Node agent behaviour]).
std::map<std::string, std::string> rankEnvironment(std::map<std::string, std::string> base,
                                                   const NodeAgentOptions& options, std::int64_t local_rank);

struct NodeAgentResult {
  int exitCode = 0;    // 0: every rank exited 0; 1: otherwise
  std::string reason;  // as in the agent_finished event
};

// Runs the agent to the end. A Status only when nothing could start (bad options, the
// run directory or event file cannot be created, the command cannot be resolved);
// progress and the failure reason go to `log` (the CLI passes stderr).
protocol::StatusOr<NodeAgentResult> runNodeAgent(const NodeAgentOptions& options, std::ostream& log);

}  // namespace fs::launch
