// SIGTERM / SIGINT as stop requests the trainer reads between steps.
//
//   SIGTERM (SLURM preemption, `kill`)  -> stop: finish the step, checkpoint, exit 0
//   first SIGINT (Ctrl-C)               -> stop, the same
//   second SIGINT                       -> kill: the process dies by SIGINT at once
//                                          (or only killRequested(), see options)
// The first request wins: stopSignal() reports which signal asked. The handlers only
// store to lock-free atomics (and, for the kill, reset SIGINT to its default action and
// re-raise it; optionally write one line to stderr), all async-signal-safe; they are
// installed with SA_RESTART, so no system call of the trainer fails with EINTR.
//
// Thread-safety: the queries may be called from any thread. installStopSignals()
// replaces the process-wide dispositions of SIGTERM and SIGINT: call it once, early,
// from the main thread.
#pragma once

#include "backend/protocol/status.h"

namespace fs::telemetry {

struct StopSignalOptions {
  // Second SIGINT: true restores the default action and re-raises, so the process ends
  // even when its training thread is stuck in a collective. false only sets
  // killRequested() and leaves the exit to the trainer.
  bool second_sigint_kills = true;
  // Write a short line to stderr when a signal arrives ("stopping after this step ...").
  bool announce = true;
};

// Installs the handlers. IOError when sigaction fails.
protocol::Status installStopSignals(const StopSignalOptions& options = {});

// SIGTERM or SIGINT arrived: stop gracefully.
bool stopRequested();
// A second SIGINT arrived (only observable when second_sigint_kills is false).
bool killRequested();
// The signal that first requested the stop (SIGTERM or SIGINT); 0 when none.
int stopSignal();
// Forgets every request (tests; a process that handled a stop and goes on).
void clearStopRequests();

}  // namespace fs::telemetry
