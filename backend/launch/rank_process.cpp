#include "backend/launch/rank_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "backend/launch/agent_signals.h"

namespace fs::launch {

using protocol::Status;
using protocol::StatusOr;

namespace {

std::vector<char*> cStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The child between fork and exec: only async-signal-safe calls. Never returns.
[[noreturn]] void execChild(const char* program, char* const* argv, char* const* envp, int devnull,
                            int err_fd, pid_t parent) {
  int err = 0;
  if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) err = errno;
  if (err == 0 && ::getppid() != parent) err = ESRCH;  // the agent died before prctl
  if (err == 0 && ::setpgid(0, 0) != 0) err = errno;
  if (err == 0 && devnull >= 0 && ::dup2(devnull, STDIN_FILENO) < 0) err = errno;
  if (err == 0) {
    resetSignalsInChild();
    ::execve(program, argv, envp);
    err = errno;
  }
  [[maybe_unused]] ssize_t n = ::write(err_fd, &err, sizeof err);
  ::_exit(127);
}

}  // namespace

StatusOr<pid_t> spawnRank(const RankCommand& command, const std::map<std::string, std::string>& env) {
  // Everything the child needs is built before fork: it may not allocate afterwards.
  std::vector<std::string> args = command.argv;
  std::vector<std::string> vars;
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  std::vector<char*> argv = cStrings(args), envp = cStrings(vars);

  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    return Status::ioError("cannot start " + command.program + ": pipe: " + std::strerror(errno));
  }
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t parent = ::getpid();
  // No handler of the agent may run in the child before exec: block everything across fork.
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  pid_t pid = ::fork();
  if (pid == 0) execChild(command.program.c_str(), argv.data(), envp.data(), devnull, err_pipe[1], parent);
  int fork_err = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::close(err_pipe[1]);
  if (devnull >= 0) ::close(devnull);
  if (pid < 0) {
    ::close(err_pipe[0]);
    return Status::ioError("cannot start " + command.program + ": fork: " + std::strerror(fork_err));
  }
  ::setpgid(pid, pid);  // also done by the child; whichever runs first wins, both agree

  // The pipe closes on a successful exec; otherwise the child sends errno and exits.
  int child_err = 0;
  ssize_t n;
  do {
    n = ::read(err_pipe[0], &child_err, sizeof child_err);
  } while (n < 0 && errno == EINTR);
  ::close(err_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof child_err)) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return Status::ioError("cannot run " + command.program + ": " + std::strerror(child_err));
  }
  return pid;
}

bool signalRank(pid_t pid, int sig) {
  if (pid <= 0) return false;
  if (::kill(-pid, sig) == 0) return true;
  return ::kill(pid, sig) == 0;
}

StatusOr<std::string> findProgram(const std::string& name, const std::string& path_var) {
  auto executable = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
  };
  if (name.empty()) return Status::invalidArgument("the rank command's program name is empty");
  if (name.find('/') != std::string::npos) {
    if (executable(name)) return name;
    return Status::notFound("program '" + name + "' is not an executable file");
  }
  std::size_t start = 0;
  while (start <= path_var.size()) {
    std::size_t colon = path_var.find(':', start);
    std::string dir = path_var.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (executable(candidate)) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return Status::notFound("program '" + name + "' not found in PATH (" + path_var + ")");
}

}  // namespace fs::launch
