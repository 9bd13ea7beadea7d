#include "studio/remote/remote_cli.h"

#include "studio/remote/commands.h"
#include "studio/remote/terminal_text.h"

namespace fs::studio::remote {
namespace {

const char* const kUsage =
    "usage: flamingo-studio remote COMMAND [options] ...\n\n"
    "Runs on other machines, from a terminal: the same classes the window uses.\n\n"
    "commands:\n"
    "  hosts HOST[,HOST...]      pre-flight checks per host (engine, disk, cores/GPUs, rendezvous, clock)\n"
    "  ls HOST                   runs under the host's run root and their states\n"
    "  launch --config F --hosts A,B    launch on SSH nodes (one node agent per host)\n"
    "  launch --config F --slurm LOGIN  submit to SLURM through a login node (--print-script: show only)\n"
    "  follow HOST:RUN_DIR       a live progress line until the run ends (--jsonl: the events)\n"
    "  stop | kill | checkpoint | pause | resume HOST:RUN_DIR\n"
    "                            a control command, acknowledged through the run's events\n"
    "  queue LOGIN               your SLURM jobs\n\n"
    "HOST is an ssh_config alias or [user@]host, or 'local' for this machine. Host keys are checked\n"
    "against known_hosts; an unknown key is shown with its SHA256 fingerprint and you decide (--batch:\n"
    "refused). 'flamingo-studio remote COMMAND --help' tells more. Exit codes: 0 success, 1 failure,\n"
    "2 bad usage.\n";

// The command, writing to out and err as they are given.
int runCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << kUsage;
    return kExitUsage;
  }
  const std::string& command = args[0];
  const Args rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    out << kUsage;
    return kExitOk;
  }
  if (command == "hosts") return cmdHosts(rest, out, err);
  if (command == "ls") return cmdLs(rest, out, err);
  if (command == "launch") return cmdLaunch(rest, out, err);
  if (command == "follow") return cmdFollow(rest, out, err);
  if (command == "queue") return cmdQueue(rest, out, err);
  for (const char* verb : {"stop", "kill", "checkpoint", "pause", "resume"}) {
    if (command == verb) return cmdControl(command, rest, out, err);
  }
  err << "flamingo-studio remote: unknown command '" << command << "'\n\n" << kUsage;
  return kExitUsage;
}

}  // namespace

int runRemoteCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 Terminals terminals) {
  TerminalTextBuf outBuf(out.rdbuf()), errBuf(err.rdbuf());
  std::ostream safeOut(&outBuf), safeErr(&errBuf);
  const int code = runCommand(args, terminals.out ? safeOut : out, terminals.err ? safeErr : err);
  safeOut.flush();
  safeErr.flush();
  return code;
}

}  // namespace fs::studio::remote
