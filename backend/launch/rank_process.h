// Starting and signalling one rank process.
//
// spawnRank forks and execs a rank with exactly the environment given, and in the child
// before exec:
//  - PR_SET_PDEATHSIG(SIGTERM): the rank gets SIGTERM when the agent dies, even by
//    SIGKILL, and stops as on any SIGTERM (checkpoint, exit);
//  - its own process group (setpgid), so a terminal's Ctrl-C reaches only the agent,
//    which forwards it once; signalRank signals that whole group;
//  - stdin from /dev/null (a rank in a background group reading the terminal would stop);
//  - the agent's signal dispositions and mask undone (resetSignalsInChild).
// stdout and stderr are the agent's. An exec failure is reported as a Status (through a
// close-on-exec pipe), never as a rank that silently exits 127.
//
// Thread-safety: spawnRank may be called from any thread, but PR_SET_PDEATHSIG fires when
// the *thread* that forked exits: call it from the thread that outlives the ranks (the
// agent's main thread).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::launch {

struct RankCommand {
  std::string program;            // path to execute (absolute, or relative to the cwd)
  std::vector<std::string> argv;  // argv[0] included
};

// Starts the rank; returns its pid. IOError naming the program when fork or exec fails.
protocol::StatusOr<pid_t> spawnRank(const RankCommand& command,
                                    const std::map<std::string, std::string>& env);

// Sends `sig` to the rank's process group (falling back to the rank alone). False when
// neither exists any more.
bool signalRank(pid_t pid, int sig);

// `name` itself when it contains '/', else the first executable PATH entry holding it;
// NotFound naming the program and the PATH searched.
protocol::StatusOr<std::string> findProgram(const std::string& name, const std::string& path_var);

}  // namespace fs::launch
