// The node agent's signals, as bytes on a self-pipe its event loop polls.
//
// install() routes SIGTERM, SIGINT, SIGHUP and SIGCHLD to handlers that only write the
// signal number (one byte) to a non-blocking pipe — async-signal-safe, no flags to race
// on — and ignores SIGPIPE (a closed terminal must not kill the agent mid-stop). The
// loop polls fd() and calls drain(). Destruction restores the previous dispositions.
// Ranks must not inherit any of this: resetSignalsInChild() undoes it between fork and
// exec.
//
// Thread-safety: one AgentSignals per process at a time (install() fails otherwise);
// use it from one thread. resetSignalsInChild is async-signal-safe.
#pragma once

#include <array>
#include <csignal>
#include <memory>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::launch {

// The signals install() changes, in the order they are restored.
inline constexpr std::array<int, 5> kAgentSignals = {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGPIPE};

class AgentSignals {
 public:
  static protocol::StatusOr<std::unique_ptr<AgentSignals>> install();
  ~AgentSignals();
  AgentSignals(const AgentSignals&) = delete;
  AgentSignals& operator=(const AgentSignals&) = delete;

  // Readable (POLLIN) when a signal arrived since the last drain().
  int fd() const { return read_fd_; }
  // The signals received since the last call, in arrival order (repeats kept).
  std::vector<int> drain();

 private:
  AgentSignals(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {}

  int read_fd_ = -1;
  int write_fd_ = -1;
  std::array<struct sigaction, kAgentSignals.size()> previous_{};
  std::size_t installed_ = 0;  // how many of kAgentSignals have a saved disposition
};

// In a forked child before exec: default dispositions for kAgentSignals and an empty
// signal mask. Async-signal-safe.
void resetSignalsInChild();

// "SIGKILL" for 9; "SIG<n>" for numbers without a name.
std::string signalName(int sig);

}  // namespace fs::launch
