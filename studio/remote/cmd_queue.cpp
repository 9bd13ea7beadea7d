// remote queue: the user's SLURM jobs on a login node (app/launch/slurm/slurm_jobs.h).
#include <iomanip>

#include "app/launch/slurm/slurm_jobs.h"
#include "studio/remote/cli_context.h"
#include "studio/remote/commands.h"
#include "studio/remote/remote_cli.h"

namespace fs::studio::remote {

namespace {

const char* const kUsage = "usage: flamingo-studio remote queue LOGIN [--job ID]... [options]\n";
const char* const kHelp =
    "\nOne squeue call on LOGIN ('local': this machine) for all your active jobs, or the jobs given with\n"
    "--job (ended ones too, while the controller remembers them): id, name, state, reason, elapsed time,\n"
    "node count and nodes. Cancel one with scancel, or with 'flamingo-studio remote stop HOST:RUN_DIR'\n"
    "to checkpoint first.\n";

}  // namespace

int cmdQueue(const Args& args, std::ostream& out, std::ostream& err) {
  auto start = startCommand(
      args, kUsage, kHelp,
      {{"job", true, true, "ID", "Only this job (repeatable)"},
       {"slurm-env", true, true, "NAME=VALUE", "Environment for the SLURM commands (e.g. SLURM_CONF=...)"}},
      1, 1, out, err);
  if (start.exitCode >= 0) return start.exitCode;
  auto envPrefix = slurmEnvPrefix(start.args.all("slurm-env"));
  if (!envPrefix) {
    err << envPrefix.status().message() << "\n";
    return kExitUsage;
  }
  const std::vector<std::string>& prefix = envPrefix.value();
  auto host = start.ctx->open(start.args.positionals[0]);
  if (!host) {
    err << host.status().message() << "\n";
    return kExitFailure;
  }
  app::cluster::SlurmJobs jobs(*host.value(), prefix);
  auto rows = jobs.queue(start.args.all("job"));
  if (!rows) {
    err << rows.status().message() << "\n";
    return kExitFailure;
  }
  out << std::left << std::setw(12) << "JOBID" << std::setw(24) << "NAME" << std::setw(12) << "STATE"
      << std::setw(16) << "REASON" << std::setw(12) << "ELAPSED" << std::setw(6) << "NODES"
      << "NODELIST\n";
  for (const auto& r : rows.value()) {
    out << std::setw(12) << r.id << std::setw(24) << r.name << std::setw(12) << r.state << std::setw(16)
        << r.reason << std::setw(12) << r.elapsed << std::setw(6) << r.nodes << r.nodelist << "\n";
  }
  return kExitOk;
}

}  // namespace fs::studio::remote
