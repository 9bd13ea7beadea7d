// Each case forks a child that installs the handlers and reports what it saw through
// its exit code; the parent sends the signals. Pipes order the two sides, so nothing
// depends on timing: the parent only signals once the child says it is ready.
#include "backend/telemetry/stop_signals.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <thread>

namespace fs::telemetry {
namespace {

constexpr int kTimedOut = 99;

// Exit code bits the children report.
int flags() {
  return (stopRequested() ? 1 : 0) | (killRequested() ? 2 : 0) | (stopSignal() == SIGTERM ? 4 : 0) |
         (stopSignal() == SIGINT ? 8 : 0);
}

// Polls `cond` for up to 10 s, as a trainer polls between steps.
bool waitFor(const std::function<bool()>& cond) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    ::usleep(1000);
  }
  return true;
}

struct Child {
  pid_t pid = -1;
  int to_parent = -1;  // read end: one byte per "ready" the child reports

  void waitReady() const {
    char c = 0;
    ASSERT_EQ(::read(to_parent, &c, 1), 1) << "the child died early";
  }
  int wait() const {
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    ::close(to_parent);
    return status;
  }
};

// Runs `body(ready)` in a child; `ready()` tells the parent to go on.
Child spawn(const std::function<int(const std::function<void()>&)>& body) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    auto ready = [&] {
      char c = 'r';
      if (::write(fds[1], &c, 1) != 1) ::_exit(98);
    };
    ::_exit(body(ready));
  }
  ::close(fds[1]);
  return Child{pid, fds[0]};
}

TEST(StopSignalsTest, SigtermRequestsAGracefulStop) {
  Child child = spawn([](const std::function<void()>& ready) {
    if (!installStopSignals({.second_sigint_kills = true, .announce = false}).isOk()) return 97;
    if (flags() != 0) return 96;
    ready();
    if (!waitFor(stopRequested)) return kTimedOut;
    return flags();
  });
  child.waitReady();
  ASSERT_EQ(::kill(child.pid, SIGTERM), 0);
  int status = child.wait();
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 1 | 4);  // stop by SIGTERM, no kill
}

TEST(StopSignalsTest, FirstSigintStopsSecondKills) {
  Child child = spawn([](const std::function<void()>& ready) {
    if (!installStopSignals({.second_sigint_kills = true, .announce = false}).isOk()) return 97;
    ready();
    if (!waitFor(stopRequested)) return kTimedOut;
    if (flags() != (1 | 8)) return 50 + flags();
    ready();                        // the trainer is checkpointing; the user presses Ctrl-C again
    waitFor([] { return false; });  // the second SIGINT must end the process
    return kTimedOut;
  });
  child.waitReady();
  ASSERT_EQ(::kill(child.pid, SIGINT), 0);
  child.waitReady();
  ASSERT_EQ(::kill(child.pid, SIGINT), 0);
  int status = child.wait();
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGINT);
}

TEST(StopSignalsTest, SecondSigintCanBeLeftToTheTrainer) {
  Child child = spawn([](const std::function<void()>& ready) {
    if (!installStopSignals({.second_sigint_kills = false, .announce = false}).isOk()) return 97;
    ready();
    if (!waitFor(stopRequested)) return kTimedOut;
    if (killRequested()) return 95;
    ready();
    if (!waitFor(killRequested)) return kTimedOut;
    return flags();
  });
  child.waitReady();
  ASSERT_EQ(::kill(child.pid, SIGINT), 0);
  child.waitReady();
  ASSERT_EQ(::kill(child.pid, SIGINT), 0);
  int status = child.wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1 | 2 | 8);
}

TEST(StopSignalsTest, SigtermThenSigintKeepsTheFirstReason) {
  Child child = spawn([](const std::function<void()>& ready) {
    if (!installStopSignals({.second_sigint_kills = false, .announce = false}).isOk()) return 97;
    ready();
    if (!waitFor(stopRequested)) return kTimedOut;
    ready();
    // One SIGINT after a SIGTERM is the first SIGINT: still only a stop.
    ::usleep(200000);
    return flags();
  });
  child.waitReady();
  ASSERT_EQ(::kill(child.pid, SIGTERM), 0);
  child.waitReady();
  ASSERT_EQ(::kill(child.pid, SIGINT), 0);
  int status = child.wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1 | 4);
}

TEST(StopSignalsTest, ClearForgetsRequests) {
  Child child = spawn([](const std::function<void()>& ready) {
    if (!installStopSignals({.second_sigint_kills = false, .announce = false}).isOk()) return 97;
    ::raise(SIGTERM);
    if (!stopRequested()) return 96;
    clearStopRequests();
    return flags();
  });
  int status = child.wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace fs::telemetry
