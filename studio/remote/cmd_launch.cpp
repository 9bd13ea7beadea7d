// remote launch: on SSH nodes (app/launch/ssh/ssh_launch.h) after a pre-flight, or as a
// SLURM batch job through a login node (app/launch/slurm/slurm_script.h, slurm_jobs.h).
#include <QDateTime>
#include <fstream>
#include <sstream>

#include "app/cluster/preflight.h"
#include "app/launch/run_preparation.h"
#include "app/launch/slurm/slurm_jobs.h"
#include "app/launch/slurm/slurm_script.h"
#include "app/launch/ssh/ssh_launch.h"
#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/pipe_commands.h"
#include "backend/protocol/config/run_location.h"
#include "studio/remote/cli_context.h"
#include "studio/remote/commands.h"
#include "studio/remote/remote_cli.h"

namespace fs::studio::remote {

namespace {

const char* const kUsage =
    "usage: flamingo-studio remote launch --config FILE --hosts A[,B...] [options]\n"
    "       flamingo-studio remote launch --config FILE --slurm LOGIN [--print-script | --script FILE] "
    "[options]\n";
const char* const kHelp =
    "\nWith --hosts: sets launch.kind=ssh, launch.hosts and launch.nnodes from the list, runs the\n"
    "pre-flight checks (a failing one stops the launch; --no-preflight skips them), creates a new run\n"
    "directory under the run root on node 0, uploads config.yaml over SFTP, checks whether the run root\n"
    "is shared by all nodes, and starts one detached node agent (flamingo-train launch) per host. The\n"
    "run outlives this command and the SSH connections. Prints HOST:RUN_DIR for follow, stop, ...\n\n"
    "With --slurm: sets launch.kind=slurm, generates the batch script from the config (launch.slurm.*),\n"
    "creates the run directory on the login node and submits the script with sbatch. --print-script\n"
    "prints the script and submits nothing; --script FILE submits FILE instead (an edited preview)\n"
    "into the run directory its '#SBATCH --chdir' line names (the preview's), made when missing.\n\n"
    "A config whose shards are read with pipe:COMMAND runs those commands with /bin/sh -c on every\n"
    "rank: it is refused, with every command listed, unless --allow-pipe is given (the ranks then get\n"
    "it too). --print-script runs nothing and is not refused.\n\n"
    "A config with launch.slurm.extra_args puts them into the batch script as #SBATCH lines, where an\n"
    "option can change what the job runs: --slurm refuses it, with every line listed, unless\n"
    "--allow-slurm-args is given (read the whole script with --print-script first). Options the\n"
    "script sets itself, --wrap, --export-file and --export values that set BASH_ENV, ENV, LD_*, ...\n"
    "are refused even then.\n";

std::string utcStamp() {
  return QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")).toStdString();
}

int fail(std::ostream& err, const std::string& message) {
  err << message << "\n";
  return kExitFailure;
}

// NOTE [Pipe approval] (backend/protocol/config/pipe_commands.h): the config and its --set
// values as the ranks will read them; false (after saying why) when they run pipe: commands
// and --allow-pipe was not given.
bool pipeCommandsAllowed(const app::LaunchRequest& request, bool allowed, const std::string& configPath,
                         std::ostream& err) {
  if (allowed) return true;
  protocol::RunConfig config = request.config;
  std::vector<std::string> sets;
  for (const QString& o : request.overrides) sets.push_back(o.toStdString());
  (void)protocol::applyOverrides(&config, sets);  // bad overrides are reported by the launch itself
  const auto sources = protocol::pipeSources(config);
  if (sources.empty()) return true;
  err << protocol::pipeRefusal("flamingo-studio remote launch", configPath, sources);
  return false;
}

// The config's launch.slurm.extra_args as the job will get them (with --set); false (after
// listing them) when there are any and --allow-slurm-args was not given. Like a pipe: source,
// an sbatch option in a config can run code on the cluster (NOTE [SLURM extra args] in
// app/launch/slurm/slurm_script.h), so one the user did not type here must be shown first.
bool slurmArgsAllowed(const app::LaunchRequest& request, bool allowed, const std::string& configPath,
                      std::ostream& err) {
  if (allowed) return true;
  protocol::RunConfig config = request.config;
  std::vector<std::string> sets;
  for (const QString& o : request.overrides) sets.push_back(o.toStdString());
  (void)protocol::applyOverrides(&config, sets);  // bad overrides are reported by the launch itself
  const auto& args = config.launch.slurm.extra_args;
  if (args.empty()) return true;
  err << app::cluster::slurmArgsRefusal("flamingo-studio remote launch", configPath, args);
  return false;
}

int launchSsh(CliContext& ctx, const ParsedArgs& a, app::LaunchRequest request, std::ostream& out,
              std::ostream& err) {
  const auto hosts = splitList(a.get("hosts"));
  if (hosts.empty()) return fail(err, "--hosts: no host given");
  std::string list;
  for (const auto& h : hosts) list += (list.empty() ? "" : ", ") + h;
  request.overrides << QStringLiteral("launch.kind=ssh")
                    << QStringLiteral("launch.nnodes=%1").arg(hosts.size())
                    << QString::fromStdString("launch.hosts=[" + list + "]");
  if (a.has("master-addr")) {
    request.overrides << QString::fromStdString("launch.master_addr=" + a.get("master-addr"));
  } else if (hosts.size() > 1 && (request.config.launch.master_addr.empty() ||
                                  request.config.launch.master_addr == "127.0.0.1")) {
    request.overrides << QString::fromStdString("launch.master_addr=" + ctx.addressOf(hosts[0]));
  }
  auto resolved = app::resolveLaunchConfig(request, false);
  if (!resolved.isOk()) return fail(err, resolved.error.toStdString());
  app::cluster::SshLaunchPlan plan;
  plan.config = resolved.config;
  plan.runRoot =
      a.get("run-root",
            plan.config.launch.remote_workdir.empty() ? "flamingo-runs" : plan.config.launch.remote_workdir);
  plan.config.run_root = plan.runRoot;
  plan.runName =
      app::sanitizeRunName(QString::fromStdString(plan.config.name)).toStdString() + "-" + utcStamp();
  plan.engine = a.get("engine", "flamingo-train");
  plan.allowPipe = request.allowPipe;
  auto open = [&ctx](const std::string& name) { return ctx.open(name); };
  if (!a.has("no-preflight")) {
    app::cluster::PreflightRequest check;
    std::vector<std::shared_ptr<app::remote::Host>> opened;
    for (const auto& h : hosts) {
      auto host = ctx.open(h);
      if (!host) return fail(err, host.status().message());
      opened.push_back(host.value());
      check.hosts.push_back({host->get(), a.has("engine") ? a.get("engine") : std::string()});
    }
    check.rendezvous_address = plan.config.launch.master_addr;
    check.rendezvous_port = static_cast<int>(plan.config.launch.master_port);
    check.run_root = plan.runRoot;
    check.gpus_per_node = static_cast<int>(plan.config.launch.slurm.gpus_per_node);
    const auto table = app::cluster::runPreflight(check);
    out << table.toText();
    if (!table.ok())
      return fail(err, "pre-flight failed: nothing launched (fix the rows above, or --no-preflight)");
  }
  auto result = app::cluster::launchOverSsh(plan, open, [&out](const std::string& m) { out << m << "\n"; });
  if (!result) return fail(err, result.status().message());
  for (const auto& w : result->warnings) err << "warning: " << w << "\n";
  out << hosts[0] << ":" << result->record.run_dir << "\n";
  return kExitOk;
}

int launchSlurm(CliContext& ctx, const ParsedArgs& a, app::LaunchRequest request, std::ostream& out,
                std::ostream& err) {
  const std::string login = a.get("slurm");
  request.overrides << QStringLiteral("launch.kind=slurm");
  auto resolved = app::resolveLaunchConfig(request, false);
  if (!resolved.isOk()) return fail(err, resolved.error.toStdString());
  protocol::RunConfig config = resolved.config;
  const std::string root = a.get(
      "run-root", config.launch.remote_workdir.empty() ? "flamingo-runs" : config.launch.remote_workdir);
  config.run_root = root;
  const std::string runName =
      app::sanitizeRunName(QString::fromStdString(config.name)).toStdString() + "-" + utcStamp();
  auto envPrefix = slurmEnvPrefix(a.all("slurm-env"));
  if (!envPrefix) {
    err << envPrefix.status().message() << "\n";
    return kExitUsage;
  }
  const std::vector<std::string>& prefix = envPrefix.value();
  auto host = ctx.open(login);
  if (!host) return fail(err, host.status().message());
  app::cluster::SlurmJobSpec spec;
  spec.engine = a.get("engine", "flamingo-train");
  spec.allow_pipe = request.allowPipe;
  if (a.has("print-script")) {
    auto onHost = protocol::hostRunRoot(root);  // NOTE [A run root under ~]
    if (!onHost) return fail(err, onHost.status().message());
    std::string absolute =
        onHost.value();  // shown, not created: a relative root is under the login directory
    if (!absolute.starts_with('/')) {
      auto home = host.value()->run({"sh", "-c", "printf '%s' \"$HOME\""});
      if (!home || home->exit_code != 0 || home->out.empty())
        return fail(err, login + ": cannot find the login directory");
      absolute = absolute == "." ? home->out : home->out + "/" + absolute;
    }
    spec.run_dir = absolute + "/" + runName;
    for (const auto& p : app::cluster::validateSlurmJob(config, spec)) err << protocol::formatProblems({p});
    auto script = app::cluster::makeSlurmScript(config, spec);
    if (!script) return fail(err, script.status().message());
    out << script.value();
    return kExitOk;
  }
  std::string script;
  if (a.has("script")) {
    // The preview was made for a run directory (its --chdir line): the job goes there.
    std::ifstream in(a.get("script"), std::ios::binary);
    if (!in) return fail(err, "--script " + a.get("script") + ": cannot read it");
    std::ostringstream text;
    text << in.rdbuf();
    script = text.str();
    spec.run_dir = app::cluster::slurmScriptRunDir(script);
    if (!spec.run_dir.starts_with('/')) {
      return fail(err, "--script " + a.get("script") + ": no '#SBATCH --chdir=' line with an absolute run " +
                           "directory ('" + spec.run_dir + "'); print a script with --print-script");
    }
  } else {
    auto runDir = app::cluster::createRunDirectory(*host.value(), root, runName);
    if (!runDir) return fail(err, runDir.status().message());
    spec.run_dir = runDir.value();
    auto made = app::cluster::makeSlurmScript(config, spec);
    if (!made) return fail(err, made.status().message());
    script = made.value();
  }
  app::cluster::SlurmJobs jobs(*host.value(), prefix);
  auto id = jobs.submit(spec.run_dir, script, config);
  if (!id) return fail(err, id.status().message());
  protocol::LaunchRecord record;
  record.launcher = protocol::LauncherKind::kSlurm;
  record.run_dir = spec.run_dir;
  record.created = QDateTime::currentMSecsSinceEpoch();
  record.slurm = protocol::LaunchedJob{login, id.value(), "slurm.sbatch"};
  if (auto s =
          host.value()->writeFileAtomic(spec.run_dir + "/" + std::string(protocol::kLaunchRecordFileName),
                                        protocol::encodeLaunchRecord(record));
      !s) {
    err << "warning: launch.json not written: " << s.message() << "\n";
  }
  out << "submitted batch job " << id.value() << "\n" << login << ":" << spec.run_dir << "\n";
  return kExitOk;
}

}  // namespace

int cmdLaunch(const Args& args, std::ostream& out, std::ostream& err) {
  auto start = startCommand(
      args, kUsage, kHelp,
      {{"config", true, false, "FILE", "Run config (YAML) on this machine (required)"},
       {"hosts", true, false, "A,B", "SSH nodes, node 0 first: ssh_config aliases or [user@]host"},
       {"slurm", true, false, "LOGIN", "Submit through this login node ('local': sbatch here)"},
       {"name", true, false, "NAME", "Run name (default: the config's name)"},
       {"run-root", true, false, "DIR",
        "Run root on the hosts (default: launch.remote_workdir, else flamingo-runs)"},
       {"engine", true, false, "PATH", "flamingo-train on the hosts (default: found on the login PATH)"},
       {"master-addr", true, false, "ADDR",
        "Node 0's address as the others reach it (default: its HostName)"},
       {"set", true, true, "PATH=VALUE", "Override a config value (repeatable)"},
       {"no-preflight", false, false, "", "Launch without the pre-flight checks"},
       {"allow-pipe", false, false, "", "Run the config's pipe:COMMAND shard sources (refused without it)"},
       {"allow-slurm-args", false, false, "",
        "SLURM: submit with the config's launch.slurm.extra_args (refused without it)"},
       {"print-script", false, false, "", "SLURM: print the batch script; submit nothing"},
       {"script", true, false, "FILE", "SLURM: submit this script (an edited preview) instead"},
       {"slurm-env", true, true, "NAME=VALUE",
        "SLURM: environment for the SLURM commands (e.g. SLURM_CONF=...)"}},
      0, 0, out, err);
  if (start.exitCode >= 0) return start.exitCode;
  const ParsedArgs& a = start.args;
  if (!a.has("config")) {
    err << "flamingo-studio remote launch: --config is required\n" << kUsage;
    return kExitUsage;
  }
  if (a.has("hosts") == a.has("slurm")) {
    err << "flamingo-studio remote launch: give exactly one of --hosts and --slurm\n" << kUsage;
    return kExitUsage;
  }
  const auto loaded = protocol::loadConfigFile(a.get("config"));
  if (!loaded.ok()) return fail(err, protocol::formatProblems(loaded.problems));
  app::LaunchRequest request;
  request.config = loaded.config;
  request.name = QString::fromStdString(a.get("name"));
  for (const auto& s : a.all("set")) request.overrides << QString::fromStdString(s);
  if (!a.has("print-script") && !pipeCommandsAllowed(request, a.has("allow-pipe"), a.get("config"), err))
    return kExitUsage;
  request.allowPipe = a.has("allow-pipe");
  // --script submits the file given, not the config's lines; --print-script submits nothing.
  if (a.has("slurm") && !a.has("print-script") && !a.has("script") &&
      !slurmArgsAllowed(request, a.has("allow-slurm-args"), a.get("config"), err))
    return kExitUsage;
  return a.has("hosts") ? launchSsh(*start.ctx, a, request, out, err)
                        : launchSlurm(*start.ctx, a, request, out, err);
}

}  // namespace fs::studio::remote
