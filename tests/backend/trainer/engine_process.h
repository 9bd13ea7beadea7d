// A real flamingo-train process for end-to-end tests, and waits on the events
// it writes: control_e2e_test, data_wait_e2e_test and disk_full_test. Waits
// poll files and events, never wall-clock thresholds; the deadline only turns
// a hang into a failure.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/protocol/wire/event_codec.h"
#include "tests/backend/trainer/engine_test_util.h"

namespace fs::trainer::test {

inline constexpr auto kProcessDeadline = std::chrono::minutes(3);

// fork + execv of argv, its stdout and stderr appended to `log` when one is given; killed and
// reaped on destruction if still running.
class EngineProcess {
 public:
  explicit EngineProcess(const std::vector<std::string>& argv, const std::filesystem::path& log = {}) {
    std::fflush(nullptr);  // the child must not print again what this process buffered
    pid_ = ::fork();
    if (pid_ == 0) {
      if (!log.empty() &&
          (!std::freopen(log.c_str(), "a", stdout) || !std::freopen(log.c_str(), "a", stderr))) {
        ::_exit(127);
      }
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~EngineProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  EngineProcess(const EngineProcess&) = delete;
  EngineProcess& operator=(const EngineProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The exit code (128 + signal when killed), or nullopt while it still runs after the deadline.
  std::optional<int> waitExit() {
    const auto deadline = std::chrono::steady_clock::now() + kProcessDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Polls the run's events.jsonl until `pred` holds for some event; fails after the deadline.
inline protocol::Event waitForEvent(const std::filesystem::path& dir,
                                    const std::function<bool(const protocol::Event&)>& pred,
                                    const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + kProcessDeadline;
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& e : readEvents(dir, /*finished=*/false)) {
      if (pred(e)) return e;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "timed out waiting for " << what;
  return protocol::Event{};
}

inline bool isAck(const protocol::Event& e, uint64_t seq) {
  const auto* a = std::get_if<protocol::ControlAckEvent>(&e.body);
  return a && a->control_seq == seq;
}

}  // namespace fs::trainer::test
