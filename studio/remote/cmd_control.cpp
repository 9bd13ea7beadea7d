// remote stop | kill | checkpoint | pause | resume: a control file written over the
// host's SFTP (app/control/remote_control.h), then its control_ack awaited in
// events.jsonl; or, with --agents, a signal to the recorded node agents.
#include "app/control/remote_control.h"
#include "app/launch/ssh/remote_agent.h"
#include "app/launch/ssh/ssh_launch.h"
#include "backend/protocol/wire/run_dir.h"
#include "studio/remote/cli_context.h"
#include "studio/remote/commands.h"
#include "studio/remote/control_ack.h"
#include "studio/remote/remote_cli.h"

namespace fs::studio::remote {

namespace {

const char* const kHelp =
    "\nClaims a seq (control/.seq/<seq>, created without replacing), writes control/<seq>-<verb>.json\n"
    "into the run directory on HOST (a temporary file, then a rename that never replaces another\n"
    "client's command) and waits for the engine's control_ack of that seq and verb in\n"
    "events.jsonl, printing it. stop: finish the step, checkpoint (unless --no-checkpoint), exit.\n"
    "kill: exit now. pause / resume: stop stepping / go on. checkpoint: save a step checkpoint.\n\n"
    "stop and kill with --agents signal the node agents that launch.json records instead (stop:\n"
    "SIGTERM, which the ranks treat as stop; kill: SIGKILL to each agent's process group), after\n"
    "checking each pid still names the process that was started (not a reused pid). Use it when the\n"
    "engine does not answer control files.\n";

// The byte size of events.jsonl now (0 when there is none yet).
std::uint64_t eventsSize(app::remote::Host& host, const std::string& file) {
  auto st = host.stat(file);
  return st ? st->size : 0;
}

int signalAgents(CliContext& ctx, const RunLocation& where, const std::string& verb, std::ostream& out,
                 std::ostream& err) {
  auto head = ctx.open(where.host);
  if (!head) {
    err << head.status().message() << "\n";
    return kExitFailure;
  }
  auto record = app::cluster::readLaunchRecord(*head.value(), where.runDir);
  if (!record) {
    err << record.status().message() << "\n";
    return kExitFailure;
  }
  int status = kExitOk;
  for (const auto& n : record->nodes) {
    auto host = ctx.open(n.host);
    if (!host) {
      err << "node " << n.node_rank << ": " << host.status().message() << "\n";
      status = kExitFailure;
      continue;
    }
    const bool kill = verb == "kill";
    // Checked against the directory the user named, not launch.json's run_dir (NOTE [Whose agent]).
    auto state = app::cluster::signalAgent(*host.value(), app::cluster::recordedAgent(n, where.runDir),
                                           kill ? "KILL" : "TERM", kill);
    if (!state) {
      err << "node " << n.node_rank << " (" << n.host << "): " << state.status().message() << "\n";
      status = kExitFailure;
    } else if (state.value() == app::cluster::AgentState::kOtherRun) {
      err << "node " << n.node_rank << " (" << n.host << "): agent pid " << n.agent_pid
          << " is not this run's agent: it does not run in " << where.runDir
          << " (launch.json names another run's process, e.g. in a copied run directory); nothing "
             "signalled\n";
      status = kExitFailure;
    } else {
      out << "node " << n.node_rank << " (" << n.host << "): agent pid " << n.agent_pid << " "
          << (state.value() == app::cluster::AgentState::kAlive
                  ? std::string(kill ? "killed" : "sent SIGTERM")
                  : std::string(app::cluster::agentStateName(state.value())) + ", nothing signalled")
          << "\n";
    }
  }
  return status;
}

}  // namespace

int cmdControl(const std::string& verb, const Args& args, std::ostream& out, std::ostream& err) {
  const std::string usage = "usage: flamingo-studio remote " + verb + " HOST:RUN_DIR [options]\n";
  std::vector<OptionSpec> specs = {
      {"no-wait", false, false, "", "Return once the control file is written"},
      {"timeout", true, false, "S", "Seconds to wait for the acknowledgement (default 120)"}};
  if (verb == "stop")
    specs.push_back({"no-checkpoint", false, false, "", "Exit without the final checkpoint"});
  if (verb == "stop" || verb == "kill") {
    specs.push_back(
        {"agents", false, false, "", "Signal the recorded node agents instead of writing a control file"});
  }
  auto start = startCommand(args, usage.c_str(), kHelp, specs, 1, 1, out, err);
  if (start.exitCode >= 0) return start.exitCode;
  auto where = parseRunLocation(start.args.positionals[0]);
  if (!where) {
    err << "flamingo-studio remote " << verb << ": " << where.status().message() << "\n";
    return kExitUsage;
  }
  if (start.args.has("agents")) return signalAgents(*start.ctx, where.value(), verb, out, err);
  int timeoutS = 120;
  try {
    timeoutS = std::stoi(start.args.get("timeout", "120"));
  } catch (const std::exception&) {
    err << "flamingo-studio remote " << verb << ": --timeout takes seconds\n";
    return kExitUsage;
  }
  auto host = start.ctx->open(where->host);
  if (!host) {
    err << host.status().message() << "\n";
    return kExitFailure;
  }
  protocol::ControlVerb controlVerb;
  protocol::parseEnum(verb, &controlVerb);
  nlohmann::json controlArgs = nlohmann::json::object();
  if (verb == "stop") controlArgs["checkpoint"] = !start.args.has("no-checkpoint");
  const std::string events = where->runDir + "/" + std::string(protocol::kEventsFileName);
  const std::uint64_t from = eventsSize(*host.value(), events);
  auto issued = app::issueRemoteControl(*host.value(), where->runDir, controlVerb, controlArgs);
  if (!issued) {
    err << issued.status().message() << "\n";
    return kExitFailure;
  }
  out << where->host << ":" << where->runDir << "/control/"
      << protocol::controlFileName(issued->seq, controlVerb) << " written\n";
  if (start.args.has("no-wait")) return kExitOk;
  return awaitControlAck(*host.value(), events, from, issued->seq, protocol::toString(controlVerb), timeoutS,
                         out, err);
}

}  // namespace fs::studio::remote
