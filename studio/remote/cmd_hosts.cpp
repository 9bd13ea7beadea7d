// remote hosts: the pre-flight table (app/cluster/preflight.h).
#include "app/cluster/preflight.h"
#include "backend/protocol/config/config_yaml.h"
#include "studio/remote/cli_context.h"
#include "studio/remote/commands.h"
#include "studio/remote/remote_cli.h"

namespace fs::studio::remote {

namespace {

const char* const kUsage = "usage: flamingo-studio remote hosts HOST[,HOST...] [options]\n";
const char* const kHelp =
    "\nChecks each host as a launch would use it, node 0 (the rendezvous node) first: flamingo-train\n"
    "found and its protocol major, free disk in the run root, cores and GPUs, node 0's rendezvous\n"
    "port reachable from every other node, clock skew. Prints one row per host and check, and what to\n"
    "do for each that is not ok. Exit 1 when a check failed.\n";

}  // namespace

int cmdHosts(const Args& args, std::ostream& out, std::ostream& err) {
  auto start = startCommand(
      args, kUsage, kHelp,
      {{"engine", true, false, "PATH", "flamingo-train on the hosts (default: found on the login PATH)"},
       {"run-root", true, false, "DIR",
        "Run root on the hosts (default: flamingo-runs in the login directory)"},
       {"master-addr", true, false, "ADDR",
        "Node 0's address as the others reach it (default: its HostName)"},
       {"master-port", true, false, "PORT", "Rendezvous port (default 29500)"},
       {"gpus", true, false, "N", "GPUs each node needs (default 0)"}},
      1, 1, out, err);
  if (start.exitCode >= 0) return start.exitCode;
  CliContext& ctx = *start.ctx;
  const auto names = splitList(start.args.positionals[0]);
  if (names.empty()) {
    err << "flamingo-studio remote hosts: no host given\n";
    return kExitUsage;
  }
  int port = 29500, gpus = 0;
  try {
    port = std::stoi(start.args.get("master-port", "29500"));
    gpus = std::stoi(start.args.get("gpus", "0"));
  } catch (const std::exception&) {
    err << "flamingo-studio remote hosts: --master-port and --gpus take numbers\n";
    return kExitUsage;
  }
  std::vector<std::shared_ptr<app::remote::Host>> hosts;
  app::cluster::PreflightRequest request;
  for (const auto& name : names) {
    auto host = ctx.open(name);
    if (!host) {
      err << host.status().message() << "\n";
      return kExitFailure;
    }
    hosts.push_back(host.value());
    request.hosts.push_back({host->get(), start.args.get("engine")});
  }
  request.rendezvous_address = start.args.get("master-addr", ctx.addressOf(names[0]));
  request.rendezvous_port = port;
  request.run_root = start.args.get("run-root", "flamingo-runs");
  request.gpus_per_node = gpus;
  const auto table = app::cluster::runPreflight(request);
  out << table.toText();
  return table.ok() ? kExitOk : kExitFailure;
}

}  // namespace fs::studio::remote
