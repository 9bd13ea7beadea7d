// Where the node agents of an SSH launch stand, and how the run ended once they
// are all gone: each agent's own record of its end (agent_finished in
// agent-<node>.jsonl), else "ended without saying how" (killed, host rebooted).
//
// Blocks on the Hosts: call it on a worker thread. Thread-safety: stateless.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/remote/remote_host.h"
#include "backend/protocol/status.h"
#include "backend/protocol/wire/launch_record.h"

namespace fs::app::cluster {

struct AgentsOutcome {
  int alive = 0;          // agents still running
  bool finished = false;  // none alive
  int exit_code = 0;      // when finished: 0 when every agent finished with 0, else the first non-zero
  bool crashed = false;   // when finished: an agent ended without recording its end
  std::string message;    // "node 1 (b): agent exited with code 1: rank 3 ... exited with code 1"
};

// `hosts[i]` is node i's Host; `holders` say which nodes keep their own copy of the
// run directory (all when launch.json says the run root is not shared, else node 0).
protocol::StatusOr<AgentsOutcome> checkAgents(const std::vector<std::shared_ptr<remote::Host>>& hosts,
                                              const protocol::LaunchRecord& record);

}  // namespace fs::app::cluster
