// Node agents on a Host: started detached, checked, signalled — by identity, not pid.
//
// NOTE [Agent identity]
// A pid names a process only while it lives; after it exits the kernel may give the
// number to another process, maybe hours later when someone presses Stop. So an
// agent is recorded as (pid, boot id, start ticks): /proc/sys/kernel/random/boot_id
// when it started and field 22 of /proc/<pid>/stat, its start time in clock ticks
// after boot, which a reused pid does not share. Every signal is sent by a fixed
// script that first checks both, on the host itself (the check and the kill are one
// remote command, microseconds apart, not a round trip apart).
//
// NOTE [Detached agents]
// An agent must outlive the GUI, the laptop's sleep and any network drop. It is
// started by `setsid` (a new session: no controlling terminal, so no SIGHUP when the
// SSH channel closes) with stdin from /dev/null and its output appended to a log
// file in the run directory (no pipe back to sshd that could break), in the
// background of a shell that returns at once with its pid.
//
// NOTE [Whose agent]
// (pid, boot id, start ticks) says which process launch.json recorded, not that it
// is this run's: a run directory copied with `cp -r`, or a launch.json edited by
// whoever can write the directory, names another process that is very much alive,
// and `remote kill --agents` signals its whole process group. An agent runs in the
// run directory it was started for (startDetached's workDir) and never changes
// directory, so the check also compares /proc/<pid>/cwd with that directory as the
// caller names it, resolved on the host (symlinks, `..`): the directory the user
// addressed, never the run_dir that launch.json itself claims. Another directory,
// or a process whose cwd we may not read (another user's), is kOtherRun and is not
// signalled.
//
// The scripts are constants; every value (paths, argv) reaches them as positional
// parameters of `sh -c SCRIPT sh ARG...`, quoted by the Host (NOTE [Remote command
// lines] in app/remote/shell_quote.h).
//
// Every function blocks on the Host: call them on a worker thread.
// Thread-safety: stateless functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/remote/remote_host.h"
#include "backend/protocol/status.h"
#include "backend/protocol/wire/launch_record.h"

namespace fs::app::cluster {

struct AgentIdentity {
  std::int64_t pid = 0;
  std::string boot_id;
  std::int64_t start_ticks = 0;
  std::string host_name;  // the node's own name (uname -n) when it started; for messages only
  std::string work_dir;   // the run directory it was started in, its working directory (required)
};

// The agent launch.json records for `node`, expected to run in `runDir`: the
// directory the caller addressed (NOTE [Whose agent]).
AgentIdentity recordedAgent(const protocol::LaunchedNode& node, const std::string& runDir);

// Starts argv detached on `host`, working directory `workDir`, output appended to
// `logFile`, with `env` ("NAME=VALUE" each) added to the login environment. Fails
// (naming the host) when workDir is missing, argv[0] is not found or a name is not a
// variable name.
protocol::StatusOr<AgentIdentity> startDetached(remote::Host& host, const std::string& workDir,
                                                const std::string& logFile,
                                                const std::vector<std::string>& argv,
                                                const std::vector<std::string>& env = {});

enum class AgentState {
  kAlive,     // the recorded process runs
  kGone,      // no process with that pid, or a zombie
  kReused,    // a process with that pid runs, but it is another one (start time differs)
  kRebooted,  // the host rebooted since: the agent is gone
  kOtherRun,  // the recorded process runs, but not in this run directory (NOTE [Whose agent])
};
// "alive", "gone", "pid reused", "host rebooted", "not this run's agent"
const char* agentStateName(AgentState s);

protocol::StatusOr<AgentState> probeAgent(remote::Host& host, const AgentIdentity& agent);

// Sends `signal` ("TERM", "KILL", "INT") to the agent when it is still the recorded
// process; with `wholeGroup`, to its process group (its ranks too). Returns the state
// found: anything but kAlive means nothing was signalled.
protocol::StatusOr<AgentState> signalAgent(remote::Host& host, const AgentIdentity& agent,
                                           const std::string& signal, bool wholeGroup = false);

}  // namespace fs::app::cluster
