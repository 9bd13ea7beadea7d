// launch.env: environment variables every rank gets, whichever launcher starts it.
//
// NOTE [Launch environment]
// launch.env (NAME: value) is set in the environment of every rank on every node, as
// torchrun's ranks inherit the environment it was started with and as `sbatch --export`
// hands variables to a job. Why a run needs it: a rank's numerics can depend on its
// environment (OpenBLAS picks its kernels from OPENBLAS_CORETYPE as the library loads), and
// neither an sshd session nor a SLURM job carries the environment of the shell the app was
// started from, so the same config on two launchers could compute different losses.
//
// Who sets it: the process that starts the ranks' launcher. A library reads such variables
// as it loads, before any code of the rank runs, so the rank cannot set them itself; and
// the node agent is not on every path (srun starts `flamingo-train train` directly, and a
// local run of one rank starts no agent). So each launcher puts launch.env into the
// environment of what it starts, and the ranks inherit it:
//   - local (app/launch/local_launcher.cpp): the QProcess environment of flamingo-train:
//     the rank itself, or the node agent, which passes its environment on to every rank;
//   - ssh (app/launch/ssh/ssh_launch.cpp, agentEnvironment): the node agents' environment,
//     exported by the start script from positional parameters that the Host quotes
//     (NOTE [Remote command lines]); the agents pass it on;
//   - slurm (app/launch/slurm/slurm_script.cpp): `export NAME='value'` lines in the batch script
//     (protocol::quoteShellWord) and `srun --export=ALL`, so every task gets the script's
//     environment whatever --export the site or launch.slurm.extra_args chose;
//   - external: whoever starts the ranks (torchrun, srun, a script of yours) sets them.
// launch.env comes last, so it wins over what the launcher adds itself (the SSH agents'
// OMP_NUM_THREADS from launch.threads_per_rank). Each rank compares its environment with
// launch.env as it starts (launchEnvDifferences) and warns about every difference, so a
// launcher that did not set them (external) is noticed before the losses differ.
//
// Refused (validateLaunchEnv): names that are not POSIX shell identifiers; values with a
// control character (NUL, newline, tab, ...), which an environment or a batch script cannot
// carry intact; and the variables the launcher sets for each rank (kLauncherVariables and
// every SLURM_*: rank discovery reads them, backend/launch/world_env.h), which would
// contradict it.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/problem.h"

namespace fs::protocol {

// What the launchers (the node agent, torchrun, srun, PMI, Open MPI) set for each rank and
// rank discovery reads (NOTE [World discovery rules], backend/launch/world_env.h). Every
// SLURM_* name is refused as well (isLauncherVariable).
inline constexpr std::array<std::string_view, 29> kLauncherVariables = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK", "MASTER_ADDR",
    "MASTER_PORT", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "OMPI_COMM_WORLD_NODE_RANK", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE", "SLURM_NODEID", "SLURM_JOB_NODELIST", "SLURM_NODELIST",
    // a node agent's attempt (NOTE [Restarts])
    "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "FLAMINGO_RESTART_REASON",
    "FLAMINGO_RESTART_FAILED_MS"};

// [A-Za-z_][A-Za-z0-9_]*
bool isEnvName(std::string_view name);
// In kLauncherVariables, or SLURM_*.
bool isLauncherVariable(std::string_view name);

// One problem per refused entry of launch.env, each at path launch.env.<NAME>.
std::vector<Problem> validateLaunchEnv(const LaunchConfig& launch);

// "NAME=VALUE" per entry, in name order: the form startDetached and env(1) take.
std::vector<std::string> launchEnvAssignments(const LaunchConfig& launch);

// Entries of launch.env that `env` (a rank's environment) lacks or holds with another value,
// one sentence each naming launch.env.<NAME>, both values and the variable.
std::vector<std::string> launchEnvDifferences(const LaunchConfig& launch,
                                              const std::map<std::string, std::string>& env);

}  // namespace fs::protocol
