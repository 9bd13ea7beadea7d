// The SLURM batch script of a run: made from the run config's launch section
// (launch.nnodes, nproc_per_node, threads_per_rank, launch.slurm.*), the run
// directory and the engine's path on the cluster. The GUI shows it, lets the
// user edit it, and SlurmJobs::submit hands the text to sbatch as it is.
//
//   #!/bin/bash
//   #SBATCH --job-name=...  --nodes, --ntasks-per-node, --cpus-per-task,
//   #SBATCH --gpus-per-node, --partition, --account, --time, --requeue,
//   #SBATCH --signal, --chdir, --output=<run>/logs/slurm-%j.out, --open-mode=append
//   #SBATCH <launch.slurm.extra_args, one per line>
//   export NAME='value'   (launch.env, one per entry)
//   srun [--export=ALL] <engine> train --config <run>/config.yaml --run-dir <run> --set launch.kind=external
//        [--allow-pipe]
//
// NOTE [SLURM batch script]: one srun task per rank; each rank finds its rank,
// world, local rank and node from SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID /
// SLURM_NTASKS_PER_NODE / SLURM_NODEID and its master address from the first
// host of SLURM_JOB_NODELIST (backend/launch/world_env.cpp). MASTER_PORT is
// derived from the job id, so two jobs sharing a node do not meet on one port,
// and moved past ports something already listens on (the script runs on the
// first node, where rank 0 listens).
// "--set launch.kind=external" because, to the engine, srun is an external
// launcher (the config in the run directory keeps kind=slurm; a resume
// compares configs without their launch section). Requeue and preemption:
// SLURM sends SIGTERM to every task, then SIGKILL after KillWait; the engine
// writes a checkpoint on SIGTERM and a requeued job resumes from the newest one
// in the same run directory (--open-mode=append keeps one log). With a time
// limit, --signal=TERM@kStopLeadS asks for that checkpoint before the limit.
// launch.env (NOTE [Launch environment] in backend/protocol/config/launch_env.h): srun starts
// the ranks itself (no node agent), so the script exports the variables and srun gets
// --export=ALL: each task then has the script's environment even when the site's
// SBATCH_EXPORT or an --export in extra_args would have handed the tasks less.
//
// Quoting: the shell part quotes every value with protocol::quoteShellWord
// (backend/protocol/cmdline/shell_words.h, single quotes); #SBATCH lines are read by sbatch, not by a shell,
// and take values in double quotes with '\' escapes (sbatchQuote); in --output, '%' is doubled since SLURM
// expands %j etc. there.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/problem.h"
#include "backend/protocol/status.h"

namespace fs::app::cluster {

// Seconds before the time limit at which SLURM sends SIGTERM (checkpoint time).
inline constexpr int kStopLeadS = 300;

struct SlurmJobSpec {
  std::string run_dir;   // absolute path on the cluster
  std::string engine;    // flamingo-train on the cluster: an absolute path or a name on its PATH
  std::string job_name;  // empty: the config's name
  bool allow_pipe =
      false;  // srun's ranks get --allow-pipe (NOTE [Pipe approval]; the GUI asks before submitting)
};

// Problems of the launch.slurm fields, launch.env and the spec, each naming its field
// ("launch.slurm.extra_args[1]", "launch.env.NAME", "run directory", ...); empty when fine.
std::vector<protocol::Problem> validateSlurmJob(const protocol::RunConfig& config, const SlurmJobSpec& spec);

// The batch script, or kInvalidArgument listing every problem.
protocol::StatusOr<std::string> makeSlurmScript(const protocol::RunConfig& config, const SlurmJobSpec& spec);

// The run directory a script names: the value of its last `#SBATCH --chdir`
// (or -D) line before the first command, unquoted as sbatch reads it; empty
// when there is none. A previewed script submitted later (an edited one)
// belongs in the directory it was made for.
std::string slurmScriptRunDir(std::string_view script);

// NOTE [SLURM extra args]: launch.slurm.extra_args become #SBATCH lines, and
// sbatch options can run code in the job before the script's first line
// (--export=BASH_ENV=$(cmd): the #!/bin/bash job expands it) or change what
// runs (--wrap). validateSlurmJob reads each item as sbatch does (NOTE
// [sbatch option parsing] in sbatch_options.h) and refuses the options the
// script sets, --wrap, --export-file, and --export values unsafeExportNames
// names. The rest are ordinary resource options, but a config travels, so
// like a pipe: source (NOTE [Pipe approval]) the lines from a config the
// user did not type are shown before a submit: the CLI refuses them without
// --allow-slurm-args (slurmArgsRefusal), the GUI asks (app/config/
// launch_approval.h, ui/config/approval_dialog.h) unless they were typed
// into the form or approved.

// The command line's refusal: "<program>: the config (<configPath> with any --set) adds sbatch
// options ...", each item with its field, and how to allow them.
std::string slurmArgsRefusal(const std::string& program, const std::string& configPath,
                             const std::vector<std::string>& extraArgs);

// Where the script sends the job's output: <run>/logs/slurm-<job id>.out.
std::string slurmLogPath(const std::string& run_dir, const std::string& job_id);

}  // namespace fs::app::cluster
