// Rank discovery: where this process stands in a distributed run, read from the
// variables its launcher set (torchrun, `flamingo-train launch`, SLURM's srun, MPICH /
// Intel MPI's PMI, Open MPI's mpirun) and from explicit flags.
//
// NOTE [World discovery rules]
// Each figure comes from the first variable of its chain that is present (the order of
// OpenFlamingo's world_info_from_env, spec section 5):
//   rank         RANK > PMI_RANK > SLURM_PROCID > OMPI_COMM_WORLD_RANK
//   world size   WORLD_SIZE > PMI_SIZE > SLURM_NTASKS > OMPI_COMM_WORLD_SIZE
//   local rank   LOCAL_RANK > MPI_LOCALRANKID > SLURM_LOCALID > OMPI_COMM_WORLD_LOCAL_RANK
//   local world  LOCAL_WORLD_SIZE > MPI_LOCALNRANKS > SLURM_NTASKS_PER_NODE > SLURM_TASKS_PER_NODE
//                > OMPI_COMM_WORLD_LOCAL_SIZE  (SLURM's "2(x3),1" form: this node's entry,
//                picked by SLURM_NODEID)
//   node rank    GROUP_RANK > NODE_RANK > SLURM_NODEID > OMPI_COMM_WORLD_NODE_RANK
//                > rank / local world
//   master       MASTER_ADDR, else the first host of SLURM_JOB_NODELIST (or SLURM_NODELIST,
//                expanded as SLURM does), else 127.0.0.1 when the world is one process
//   port         MASTER_PORT, else 29500
// Without any local-rank variable a process is local rank 0; without a local-world
// variable the local world is 1 when the local rank is unknown too (each process alone
// on its node, as OpenFlamingo assumes) and the world size otherwise.
// `source` names the family of the rank variable: torchrun (RANK), pmi, slurm, openmpi;
// "flags" when only flags gave it; "single" (rank 0 of 1) when nothing did.
//
// Launchers nest: `srun ... torchrun` leaves SLURM_PROCID / SLURM_NTASKS describing the
// per-node torchrun while RANK / WORLD_SIZE describe this rank. The earlier family in a
// chain wins without complaint; that is the mix the order exists for.
//
// Contradictions are InvalidArgument errors naming the variables:
//  - a value that is not a decimal integer, or out of range (sizes >= 1, port 1..65535);
//  - rank and world size from different families, or only one of them present
//    ("RANK=0 is set but WORLD_SIZE is not"); SLURM_PROCID alone is allowed (a batch
//    script runs as task 0 of a world of one);
//  - rank >= world size, local rank >= local world, local world > world size;
//  - a world of more than one process and no master address;
//  - a flag that disagrees with the variable its figure would come from
//    ("--rank 1 but RANK=0"): flags never override the environment silently;
//  - a malformed SLURM node list, when the master address must come from it.
//
// Thread-safety: discoverWorld and expandSlurmHostlist are pure functions;
// currentEnvironment reads `environ` and must not race with setenv.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::launch {

inline constexpr std::int64_t kDefaultMasterPort = 29500;

struct WorldInfo {
  std::int64_t rank = 0;
  std::int64_t localRank = 0;
  std::int64_t worldSize = 1;
  std::int64_t localWorldSize = 1;
  std::int64_t nodeRank = 0;
  std::string masterAddr;  // never empty in a discovered world
  std::int64_t masterPort = 0;
  std::string source;  // "torchrun" | "slurm" | "pmi" | "openmpi" | "flags" | "single"
  std::string host;    // this machine's host name
  bool operator==(const WorldInfo&) const = default;
};

// Explicit values (command-line flags); each one given must agree with the environment.
struct WorldFlags {
  std::optional<std::int64_t> rank, localRank, worldSize, localWorldSize;
  std::optional<std::string> masterAddr;
  std::optional<std::int64_t> masterPort;
};

// Applies NOTE [World discovery rules] to `env`. `host` is filled from localHostName().
protocol::StatusOr<WorldInfo> discoverWorld(const std::map<std::string, std::string>& env,
                                            const WorldFlags& flags = {});

// Every variable discoverWorld reads, each once: the chains above, MASTER_ADDR, MASTER_PORT
// and SLURM's node lists. launch.env refuses them (protocol::isLauncherVariable).
std::vector<std::string_view> worldVariableNames();

// This process's environment as a map.
std::map<std::string, std::string> currentEnvironment();

// This machine's host name (gethostname), or "localhost" when it has none.
std::string localHostName();

// Expands a SLURM host list as SLURM's hostlist_create does: entries separated by
// commas (or blanks) outside brackets; in an entry, a bracket group of numbers and
// ranges ("node[01-03,07]") expands with the zero padding of each range's first number;
// several groups multiply ("a[1-2]-ib[3-4]": a1-ib3, a1-ib4, a2-ib3, a2-ib4, in SLURM's
// order); nothing may follow the last group. Unbalanced or nested brackets, empty
// entries in a group, ranges that run backwards or hold more than 65536 hosts,
// backslashes and quotes are InvalidArgument errors quoting the text.
protocol::StatusOr<std::vector<std::string>> expandSlurmHostlist(std::string_view list);

// Parses SLURM_TASKS_PER_NODE / SLURM_NTASKS_PER_NODE ("4", "2(x3),1") into one count per
// node; InvalidArgument quoting the text.
protocol::StatusOr<std::vector<std::int64_t>> parseSlurmTasksPerNode(std::string_view text);

}  // namespace fs::launch
