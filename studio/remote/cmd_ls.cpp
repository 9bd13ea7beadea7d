// remote ls: the runs under a host's run root (app/cluster/remote_runs.h).
#include <iomanip>

#include "app/cluster/remote_runs.h"
#include "studio/remote/cli_context.h"
#include "studio/remote/commands.h"
#include "studio/remote/remote_cli.h"

namespace fs::studio::remote {

namespace {

const char* const kUsage = "usage: flamingo-studio remote ls HOST [--run-root DIR]\n";
const char* const kHelp =
    "\nLists the run directories under the run root on HOST, newest first, with the state their run.json\n"
    "gives, the launcher, the world size and, for SSH launches, the nodes from launch.json. Attach to\n"
    "one with 'flamingo-studio remote follow HOST:RUN_DIR'.\n";

}  // namespace

int cmdLs(const Args& args, std::ostream& out, std::ostream& err) {
  auto start = startCommand(args, kUsage, kHelp,
                            {{"run-root", true, false, "DIR",
                              "Run root on the host (default: flamingo-runs in the login directory)"}},
                            1, 1, out, err);
  if (start.exitCode >= 0) return start.exitCode;
  const std::string name = start.args.positionals[0];
  auto host = start.ctx->open(name);
  if (!host) {
    err << host.status().message() << "\n";
    return kExitFailure;
  }
  const auto scan = app::cluster::scanRemoteRunRoot(
      *host.value(), QString::fromStdString(start.args.get("run-root", "flamingo-runs")));
  if (!scan.error.isEmpty()) {
    err << scan.error.toStdString() << "\n";
    return kExitFailure;
  }
  out << name << ":" << scan.root.toStdString() << " (" << scan.runs.size() << " runs)\n";
  out << std::left << std::setw(40) << "RUN" << std::setw(10) << "STATE" << std::setw(7) << "LAUNCH"
      << std::setw(6) << "WORLD" << std::setw(20) << "CREATED"
      << "NODES\n";
  for (const auto& run : scan.runs) {
    const auto& s = run.summary;
    if (!s.isOk()) {
      out << std::setw(40) << s.name.toStdString() << "unreadable: " << s.error.toStdString() << "\n";
      continue;
    }
    std::string nodes;
    if (run.launch) {
      for (const auto& n : run.launch->nodes) nodes += (nodes.empty() ? "" : ",") + n.host;
      if (run.launch->slurm) nodes = "slurm job " + run.launch->slurm->job_id;
    }
    out << std::setw(40) << s.name.toStdString() << std::setw(10) << s.state.toStdString() << std::setw(7)
        << s.launcher.toStdString() << std::setw(6) << s.worldSize << std::setw(20)
        << s.created.toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")).toStdString() << nodes << "\n";
  }
  return kExitOk;
}

}  // namespace fs::studio::remote
