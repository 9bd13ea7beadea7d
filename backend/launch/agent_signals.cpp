#include "backend/launch/agent_signals.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>

namespace fs::launch {

using protocol::Status;
using protocol::StatusOr;

namespace {

std::atomic<int> gWriteFd{-1};

void onSignal(int sig) {
  int saved = errno;
  int fd = gWriteFd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    unsigned char byte = static_cast<unsigned char>(sig);
    // A full pipe already holds a wake-up; dropping this byte loses at most a repeat.
    [[maybe_unused]] ssize_t n = ::write(fd, &byte, 1);
  }
  errno = saved;
}

}  // namespace

StatusOr<std::unique_ptr<AgentSignals>> AgentSignals::install() {
  if (gWriteFd.load() >= 0)
    return Status::invalidArgument("the agent's signal handlers are already installed");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::ioError(std::string("cannot create the agent's signal pipe: ") + ::strerror(errno));
  }
  std::unique_ptr<AgentSignals> s(new AgentSignals(fds[0], fds[1]));
  gWriteFd.store(fds[1]);
  for (int sig : kAgentSignals) {
    struct sigaction sa {};
    sa.sa_handler = sig == SIGPIPE ? SIG_IGN : onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | (sig == SIGCHLD ? SA_NOCLDSTOP : 0);
    if (::sigaction(sig, &sa, &s->previous_[s->installed_]) != 0) {
      return Status::ioError("cannot install a handler for " + signalName(sig) + ": " + ::strerror(errno));
    }
    ++s->installed_;  // the destructor restores exactly these
  }
  return s;
}

AgentSignals::~AgentSignals() {
  for (std::size_t i = installed_; i-- > 0;) ::sigaction(kAgentSignals[i], &previous_[i], nullptr);
  gWriteFd.store(-1);
  ::close(read_fd_);
  ::close(write_fd_);
}

std::vector<int> AgentSignals::drain() {
  std::vector<int> out;
  unsigned char buf[64];
  while (true) {
    ssize_t n = ::read(read_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: empty
    out.insert(out.end(), buf, buf + n);
  }
  return out;
}

void resetSignalsInChild() {
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (int sig : kAgentSignals) ::sigaction(sig, &sa, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

std::string signalName(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "SIG" + std::to_string(sig);
}

}  // namespace fs::launch
