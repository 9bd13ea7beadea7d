#include "backend/telemetry/stop_signals.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

namespace fs::telemetry {

namespace {

// Only lock-free atomics may be touched from a signal handler.
static_assert(std::atomic<int>::is_always_lock_free);
static_assert(std::atomic<bool>::is_always_lock_free);

std::atomic<int> g_stop_signal{0};
std::atomic<int> g_sigint_count{0};
std::atomic<bool> g_kill{false};
std::atomic<bool> g_second_sigint_kills{true};
std::atomic<bool> g_announce{true};

void say(const char* text) {
  if (!g_announce.load(std::memory_order_relaxed)) return;
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));  // async-signal-safe
  (void)ignored;
}

void onSignal(int sig) {
  const int saved_errno = errno;
  if (sig == SIGINT && g_sigint_count.fetch_add(1) >= 1) {
    g_kill.store(true);
    if (g_second_sigint_kills.load()) {
      say("\nflamingo-train: second SIGINT: aborting now, no checkpoint\n");
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      ::sigaction(SIGINT, &dfl, nullptr);
      ::raise(SIGINT);  // pending until this handler returns; then the default action ends the process
    }
    errno = saved_errno;
    return;
  }
  int none = 0;
  if (g_stop_signal.compare_exchange_strong(none, sig)) {
    say(sig == SIGINT ? "\nflamingo-train: SIGINT: stopping after this step (checkpoint first); "
                        "press Ctrl-C again to abort\n"
                      : "\nflamingo-train: SIGTERM: stopping after this step (checkpoint first)\n");
  }
  errno = saved_errno;
}

}  // namespace

protocol::Status installStopSignals(const StopSignalOptions& options) {
  g_second_sigint_kills.store(options.second_sigint_kills);
  g_announce.store(options.announce);
  struct sigaction sa {};
  sa.sa_handler = &onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGTERM, SIGINT}) {
    if (::sigaction(sig, &sa, nullptr) != 0) {
      return protocol::Status::ioError("cannot install the handler for signal " + std::to_string(sig) + ": " +
                                       std::strerror(errno));
    }
  }
  return protocol::Status::ok();
}

bool stopRequested() {
  return g_stop_signal.load() != 0;
}

bool killRequested() {
  return g_kill.load();
}

int stopSignal() {
  return g_stop_signal.load();
}

void clearStopRequests() {
  g_stop_signal.store(0);
  g_sigint_count.store(0);
  g_kill.store(false);
}

}  // namespace fs::telemetry
