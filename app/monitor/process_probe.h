// Whether a local process id names a live process (for the dead-process alert).
//
// Thread-safety: stateless; one kill(pid, 0) system call, no file I/O.
#pragma once

#include <cstdint>

namespace fs::app {

// True when a process with this id exists on this machine (including one owned by
// another user). A pid <= 0 is never alive. Note: a pid reused by an unrelated process
// reads as alive; run.json's pid is only trusted while the run is live.
bool isProcessAlive(std::int64_t pid);

}  // namespace fs::app
