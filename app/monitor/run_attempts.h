// The run's attempts as the run view says them: run.json's `attempts` (the engine's rank 0
// records one at every start; NOTE [Restarts] in backend/launch/node_agent.h).
//
// Thread-safety: stateless functions.
#pragma once

#include <QString>
#include <vector>

#include "backend/protocol/wire/run_manifest.h"

namespace fs::app {

// "attempt 2 of 3 — restarted after: rank 1 (pid 4321) was killed by SIGKILL"; "of N" when
// the latest attempt knows the agent's max_restarts (N = max_restarts + 1). Empty for a run
// of one attempt (nothing to say), and for none (run.json older than 1.1, or not read yet).
QString attemptLine(const std::vector<protocol::RunAttempt>& attempts);

}  // namespace fs::app
