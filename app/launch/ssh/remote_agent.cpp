#include "app/launch/ssh/remote_agent.h"

#include <charconv>
#include <sstream>

namespace fs::app::cluster {
namespace {

using protocol::Status;
using protocol::StatusOr;

// $1 work dir, $2 log file, $3 N, then N "NAME=VALUE", then argv.
// Prints "fs-agent PID BOOT_ID START_TICKS HOSTNAME".
constexpr const char* kStartScript = R"sh(set -f; unset CDPATH
cd -- "$1" 2>/dev/null || { echo "fs-agent-error no such directory"; exit 97; }
log=$2
n=$3
shift 3
while [ "$n" -gt 0 ]; do export "$1"; shift; n=$((n - 1)); done
command -v -- "$1" >/dev/null 2>&1 || { echo "fs-agent-error not found"; exit 98; }
boot=$(cat /proc/sys/kernel/random/boot_id) || { echo "fs-agent-error no /proc"; exit 96; }
setsid "$@" </dev/null >>"$log" 2>&1 &
pid=$!
stat=$(cat "/proc/$pid/stat" 2>/dev/null) || { echo "fs-agent-error exited at once"; exit 95; }
rest=${stat##*) }
set -- $rest
echo "fs-agent $pid $boot ${20} $(uname -n)"
)sh";

// $1 pid, $2 boot id, $3 start ticks, $4 signal ("" = probe only), $5 "group" or "",
// $6 the run directory it must be working in. Prints "fs-agent STATE".
constexpr const char* kSignalScript = R"sh(set -f
pid=$1 boot=$2 start=$3 sig=$4 scope=$5 dir=$6
[ "$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)" = "$boot" ] || { echo "fs-agent rebooted"; exit 0; }
stat=$(cat "/proc/$pid/stat" 2>/dev/null) || { echo "fs-agent gone"; exit 0; }
rest=${stat##*) }
set -- $rest
[ "${20}" = "$start" ] || { echo "fs-agent reused"; exit 0; }
[ "$1" = Z ] && { echo "fs-agent gone"; exit 0; }
want=$(CDPATH= cd -P -- "$dir" 2>/dev/null && pwd -P) || want=
have=$(readlink "/proc/$pid/cwd" 2>/dev/null) || have=
[ -n "$want" ] && [ "$have" = "$want" ] || { echo "fs-agent other-run"; exit 0; }
if [ -n "$sig" ]; then
  if [ "$scope" = group ]; then kill -s "$sig" -- "-$pid" || exit 1; else kill -s "$sig" "$pid" || exit 1; fi
fi
echo "fs-agent alive"
)sh";

std::string firstLine(const std::string& s) {
  const auto end = s.find('\n');
  return end == std::string::npos ? s : s.substr(0, end);
}

std::string describeFailure(const remote::CommandResult& r) {
  std::string text = firstLine(r.err.empty() ? r.out : r.err);
  if (text.empty())
    text = r.signal.empty() ? "exit code " + std::to_string(r.exit_code) : "signal " + r.signal;
  return text;
}

bool parseInt(const std::string& s, std::int64_t* out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool isVariableAssignment(const std::string& kv) {
  const auto eq = kv.find('=');
  if (eq == 0 || eq == std::string::npos) return false;
  for (std::size_t i = 0; i < eq; ++i) {
    const char c = kv[i];
    const bool ok =
        c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

}  // namespace

const char* agentStateName(AgentState s) {
  switch (s) {
    case AgentState::kAlive:
      return "alive";
    case AgentState::kGone:
      return "gone";
    case AgentState::kReused:
      return "pid reused";
    case AgentState::kRebooted:
      return "host rebooted";
    case AgentState::kOtherRun:
      return "not this run's agent";
  }
  return "?";
}

StatusOr<AgentIdentity> startDetached(remote::Host& host, const std::string& workDir,
                                      const std::string& logFile, const std::vector<std::string>& argv,
                                      const std::vector<std::string>& env) {
  if (argv.empty()) return Status::invalidArgument("startDetached: empty argv");
  for (const auto& kv : env) {
    if (!isVariableAssignment(kv)) {
      return Status::invalidArgument("environment entry '" + kv +
                                     "': expected NAME=VALUE with a variable name");
    }
  }
  std::vector<std::string> command = {
      "sh", "-c", kStartScript, "sh", workDir, logFile, std::to_string(env.size())};
  command.insert(command.end(), env.begin(), env.end());
  command.insert(command.end(), argv.begin(), argv.end());
  remote::ExecOptions options;
  options.timeout_ms = 30'000;
  auto result = host.run(command, options);
  if (!result) return result.status();
  const std::string line = firstLine(result->out);
  const std::string where = host.name() + ": ";
  if (line.starts_with("fs-agent-error ")) {
    const std::string what = line.substr(15);
    if (what == "no such directory") return Status::notFound(where + "no directory " + workDir);
    if (what == "not found") {
      return Status::notFound(where + argv[0] + " not found (not on the login PATH, or not executable)");
    }
    if (what == "exited at once") {
      return Status::ioError(where + argv[0] + " exited as soon as it started; see " + logFile);
    }
    return Status::ioError(where + what);
  }
  std::istringstream words(line);
  std::string tag, pid, boot, start, id_host;
  words >> tag >> pid >> boot >> start >> id_host;
  AgentIdentity id;
  id.boot_id = boot;
  id.host_name = id_host;
  id.work_dir = workDir;
  if (result->exit_code != 0 || tag != "fs-agent" || !parseInt(pid, &id.pid) ||
      !parseInt(start, &id.start_ticks) || boot.empty()) {
    return Status::ioError(where + "starting " + argv[0] + " failed: " + describeFailure(result.value()));
  }
  return id;
}

namespace {

StatusOr<AgentState> runSignalScript(remote::Host& host, const AgentIdentity& agent,
                                     const std::string& signal, bool wholeGroup) {
  if (agent.work_dir.empty()) {
    return Status::invalidArgument(host.name() + ": agent pid " + std::to_string(agent.pid) +
                                   ": no run directory to check that it is this run's agent");
  }
  std::vector<std::string> command = {"sh",
                                      "-c",
                                      kSignalScript,
                                      "sh",
                                      std::to_string(agent.pid),
                                      agent.boot_id,
                                      std::to_string(agent.start_ticks),
                                      signal,
                                      wholeGroup ? "group" : "",
                                      agent.work_dir};
  remote::ExecOptions options;
  options.timeout_ms = 30'000;
  auto result = host.run(command, options);
  if (!result) return result.status();
  const std::string line = firstLine(result->out);
  if (line == "fs-agent alive" && result->exit_code == 0) return AgentState::kAlive;
  if (line == "fs-agent gone") return AgentState::kGone;
  if (line == "fs-agent reused") return AgentState::kReused;
  if (line == "fs-agent rebooted") return AgentState::kRebooted;
  if (line == "fs-agent other-run") return AgentState::kOtherRun;
  return Status::ioError(host.name() + ": " + (signal.empty() ? "checking" : "signalling") + " agent pid " +
                         std::to_string(agent.pid) + " failed: " + describeFailure(result.value()));
}

}  // namespace

AgentIdentity recordedAgent(const protocol::LaunchedNode& node, const std::string& runDir) {
  AgentIdentity id;
  id.pid = node.agent_pid;
  id.boot_id = node.boot_id;
  id.start_ticks = node.start_ticks;
  id.host_name = node.address;
  id.work_dir = runDir;
  return id;
}

StatusOr<AgentState> probeAgent(remote::Host& host, const AgentIdentity& agent) {
  return runSignalScript(host, agent, "", false);
}

StatusOr<AgentState> signalAgent(remote::Host& host, const AgentIdentity& agent, const std::string& signal,
                                 bool wholeGroup) {
  if (signal.empty() ||
      signal.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != std::string::npos) {
    return Status::invalidArgument("signal '" + signal + "': expected a name such as TERM or KILL");
  }
  return runSignalScript(host, agent, signal, wholeGroup);
}

}  // namespace fs::app::cluster
