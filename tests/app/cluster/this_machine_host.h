// ThisMachineHost: a TEST-ONLY remote::Host that runs argument vectors on this
// machine with posix_spawn, with a PATH of the test's choosing standing in for
// a host's login PATH. Only run() is implemented (the pre-flight uses nothing
// else); the product's LocalHost lives in app/remote/ and is not this.
//
// A program missing from PATH gives exit code 127 and "<name>: command not
// found", as a login shell on an SSH host does.
//
// Thread-safety: run() may be called from several threads at once.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "app/remote/remote_host.h"

namespace fs::test {

class ThisMachineHost : public app::remote::Host {
 public:
  ThisMachineHost(std::string name, std::string path) : name_(std::move(name)), path_(std::move(path)) {}

  std::string name() const override { return name_; }
  // The most run() calls that were in flight at once (a Host may serialise them).
  int maxConcurrentRuns() const { return maxInFlight_.load(); }
  bool connected() const override { return true; }

  protocol::StatusOr<app::remote::CommandResult> run(const std::vector<std::string>& argv,
                                                     const app::remote::ExecOptions& options) override {
    using protocol::Status;
    InFlight counted(this);
    if (argv.empty()) return Status::invalidArgument(name_ + ": empty command");
    const std::string program = resolve(argv[0]);
    if (program.empty()) return app::remote::CommandResult{127, "", "", argv[0] + ": command not found\n"};
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
      return Status::ioError(name_ + ": pipe: " + std::strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    std::vector<std::string> env = {"PATH=" + path_, "HOME=/tmp", "LANG=C"};
    std::vector<char*> cargv, cenv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (auto& e : env) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, program.c_str(), &fa, nullptr, cargv.data(), cenv.data());
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    ::close(err[1]);
    if (rc != 0) {
      ::close(out[0]);
      ::close(err[0]);
      return app::remote::CommandResult{126, "", "", argv[0] + ": " + std::strerror(rc) + "\n"};
    }
    app::remote::CommandResult result;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.timeout_ms);
    std::string why;
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open = 2;
    while (open > 0) {
      if (options.cancel && options.cancel->load()) {
        why = "cancelled";
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        why = "timed out after " + std::to_string(options.timeout_ms) + " ms";
        break;
      }
      if (::poll(fds, 2, 50) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[4096];
        const ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
        if (n > 0) {
          sinks[i]->append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          ::close(fds[i].fd);
          fds[i].fd = -1;
          --open;
        }
      }
    }
    for (auto& f : fds) {
      if (f.fd >= 0) ::close(f.fd);
    }
    if (!why.empty()) ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!why.empty()) return Status::ioError(name_ + ": " + argv[0] + ": " + why);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (WIFSIGNALED(status)) result.signal = std::to_string(WTERMSIG(status));
    return result;
  }

  // The pre-flight uses none of these.
  protocol::StatusOr<std::string> readFile(const std::string&, std::uint64_t, std::size_t) override {
    return unused("readFile");
  }
  protocol::StatusOr<app::remote::FileInfo> stat(const std::string&) override { return unused("stat"); }
  protocol::StatusOr<std::vector<app::remote::FileInfo>> list(const std::string&) override {
    return unused("list");
  }
  protocol::Status writeFileAtomic(const std::string&, std::string_view, std::uint32_t) override {
    return unused("writeFileAtomic");
  }
  protocol::StatusOr<bool> writeFileIfAbsent(const std::string&, std::string_view, std::uint32_t) override {
    return unused("writeFileIfAbsent");
  }
  protocol::Status makeDirs(const std::string&) override { return unused("makeDirs"); }
  protocol::Status remove(const std::string&) override { return unused("remove"); }

 private:
  protocol::Status unused(const char* what) const {
    return protocol::Status::unsupported(name_ + ": ThisMachineHost (tests) has no " + what);
  }

  // argv[0] as the host's PATH finds it; "" when it does not.
  std::string resolve(const std::string& name) const {
    if (name.find('/') != std::string::npos) return ::access(name.c_str(), F_OK) == 0 ? name : "";
    std::istringstream dirs(path_);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      const std::string candidate = dir + "/" + name;
      if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return "";
  }

  struct InFlight {
    explicit InFlight(ThisMachineHost* h) : host(h) {
      const int now = ++host->inFlight_;
      int seen = host->maxInFlight_.load();
      while (now > seen && !host->maxInFlight_.compare_exchange_weak(seen, now)) {
      }
    }
    ~InFlight() { --host->inFlight_; }
    ThisMachineHost* host;
  };

  std::string name_;
  std::string path_;
  std::atomic<int> inFlight_{0}, maxInFlight_{0};
};

}  // namespace fs::test
