#include "app/monitor/process_probe.h"

#include <signal.h>

#include <cerrno>
#include <limits>

namespace fs::app {

bool isProcessAlive(std::int64_t pid) {
  if (pid <= 0 || pid > std::numeric_limits<pid_t>::max()) return false;
  // Signal 0 checks existence and permission without sending anything; EPERM means it
  // exists but belongs to someone else.
  if (::kill(static_cast<pid_t>(pid), 0) == 0) return true;
  return errno == EPERM;
}

}  // namespace fs::app
