// LocalHost::run: posix_spawn of an argument vector, its stdin, stdout and
// stderr through pipes multiplexed with poll(), and the timeout / cancel that
// end its process group.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "app/remote/local_host.h"

extern char** environ;

namespace fs::app::remote {

using protocol::Status;
using protocol::StatusOr;

namespace {

std::string errnoText(int err) {
  return std::string(::strerror(err));
}

// The command for messages: its first word and the number of arguments after it.
std::string commandName(const std::vector<std::string>& argv) {
  return "'" + argv.front() + "'" +
         (argv.size() > 1 ? " (with " + std::to_string(argv.size() - 1) + " argument(s))" : "");
}

std::string signalName(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string(abbrev) : "SIG" + std::to_string(sig);
}

// A pipe whose ends are closed on destruction; both ends close-on-exec.
struct Pipe {
  int fd[2] = {-1, -1};
  bool open() { return ::pipe2(fd, O_CLOEXEC) == 0; }
  void close(int end) {
    if (fd[end] >= 0) ::close(fd[end]);
    fd[end] = -1;
  }
  ~Pipe() {
    close(0);
    close(1);
  }
};

// Output kept up to a limit; what comes after is read and dropped.
struct Sink {
  std::string* text;
  std::size_t max;
  std::uint64_t dropped = 0;
  void add(const char* data, std::size_t n) {
    const std::size_t room = text->size() < max ? max - text->size() : 0;
    text->append(data, std::min(room, n));
    dropped += n - std::min(room, n);
  }
  void finish() {
    if (dropped > 0) *text += "\n[output cut: " + std::to_string(dropped) + " more bytes dropped]\n";
  }
};

// Reads what `fd` has; false at end of file or on an error.
bool drain(int fd, Sink& sink) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      sink.add(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
}

// write() without SIGPIPE for this process when the command has closed its
// stdin (it gets EPIPE instead): SIGPIPE is blocked for this thread around the
// write and a pending one is consumed before it is unblocked.
ssize_t writeNoSigpipe(int fd, const char* data, std::size_t n) {
  sigset_t pipeSet, old;
  ::sigemptyset(&pipeSet);
  ::sigaddset(&pipeSet, SIGPIPE);
  sigset_t pending;
  ::sigpending(&pending);
  const bool alreadyPending = ::sigismember(&pending, SIGPIPE) == 1;
  ::pthread_sigmask(SIG_BLOCK, &pipeSet, &old);
  const ssize_t w = ::write(fd, data, n);
  const int err = errno;
  if (w < 0 && err == EPIPE && !alreadyPending) {
    const timespec zero{0, 0};
    while (::sigtimedwait(&pipeSet, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return w;
}

void setNonBlocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Waits for `pid` up to `ms`; true when it was reaped (status in *status).
bool reapWithin(pid_t pid, int ms, int* status) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    const pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    ::usleep(10'000);
  }
}

// Ends the command's process group: SIGTERM, then SIGKILL after the grace time.
void stopGroup(pid_t pid) {
  ::kill(-pid, SIGTERM);
  int status = 0;
  if (!reapWithin(pid, LocalHost::kStopGraceMs, &status)) {
    ::kill(-pid, SIGKILL);
    reapWithin(pid, 60'000, &status);
  }
  ::kill(-pid, SIGKILL);  // anything of the group that outlived its leader
}

}  // namespace

std::string findInPath(const std::string& name, const std::string& path) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return name;
  std::size_t start = 0;
  for (;;) {
    const std::size_t colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string::npos) return {};
    start = colon + 1;
  }
}

StatusOr<CommandResult> LocalHost::run(const std::vector<std::string>& argv, const ExecOptions& options) {
  if (argv.empty() || argv.front().empty()) return Status::invalidArgument("local: empty command");
  const char* pathEnv = std::getenv("PATH");
  const std::string exe = findInPath(argv.front(), pathEnv ? pathEnv : "/usr/local/bin:/usr/bin:/bin");
  if (exe.empty()) {
    CommandResult r;
    r.exit_code = 127;
    r.err = argv.front() + ": command not found\n";
    return r;
  }

  Pipe in, out, err;
  if (!in.open() || !out.open() || !err.open()) {
    return Status::ioError("local: cannot make pipes for " + commandName(argv) + ": " + errnoText(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attr);
  ::posix_spawn_file_actions_adddup2(&actions, in.fd[0], STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, out.fd[1], STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, err.fd[1], STDERR_FILENO);
  // Its own process group (so a stop reaches its children), default signal
  // dispositions (the app ignores SIGPIPE) and an empty signal mask.
  sigset_t defaults, empty;
  ::sigfillset(&defaults);
  ::sigdelset(&defaults, SIGKILL);
  ::sigdelset(&defaults, SIGSTOP);
  ::sigemptyset(&empty);
  ::posix_spawnattr_setsigdefault(&attr, &defaults);
  ::posix_spawnattr_setsigmask(&attr, &empty);
  ::posix_spawnattr_setpgroup(&attr, 0);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, exe.c_str(), &actions, &attr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (spawned != 0) {
    return Status::ioError("local: cannot start " + commandName(argv) + " (" + exe +
                           "): " + errnoText(spawned));
  }
  in.close(0);
  out.close(1);
  err.close(1);
  setNonBlocking(in.fd[1]);
  setNonBlocking(out.fd[0]);
  setNonBlocking(err.fd[0]);

  CommandResult result;
  Sink outSink{&result.out, options.max_output}, errSink{&result.err, options.max_output};
  std::size_t written = 0;
  if (options.stdin_data.empty()) in.close(1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.timeout_ms);
  int status = 0;
  for (;;) {
    if (options.cancel && options.cancel->load()) {
      stopGroup(pid);
      return Status::ioError("local: " + commandName(argv) + " cancelled");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      stopGroup(pid);
      return Status::ioError("local: " + commandName(argv) + " timed out after " +
                             std::to_string(options.timeout_ms) + " ms");
    }
    pollfd fds[3];
    int n = 0;
    if (in.fd[1] >= 0) fds[n++] = {in.fd[1], POLLOUT, 0};
    if (out.fd[0] >= 0) fds[n++] = {out.fd[0], POLLIN, 0};
    if (err.fd[0] >= 0) fds[n++] = {err.fd[0], POLLIN, 0};
    // A short wait so the cancel flag, the deadline and the exit are seen promptly.
    const int ready = ::poll(fds, n, 50);
    for (int i = 0; i < n && ready > 0; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in.fd[1]) {
        const ssize_t w = writeNoSigpipe(in.fd[1], options.stdin_data.data() + written,
                                         options.stdin_data.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == options.stdin_data.size()) in.close(1);
      } else if (fds[i].fd == out.fd[0]) {
        if (!drain(out.fd[0], outSink)) out.close(0);
      } else if (fds[i].fd == err.fd[0]) {
        if (!drain(err.fd[0], errSink)) err.close(0);
      }
    }
    // A daemon the command started may hold the pipes open after it exits:
    // once it has exited, take what is buffered and stop reading.
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      if (out.fd[0] >= 0) drain(out.fd[0], outSink);
      if (err.fd[0] >= 0) drain(err.fd[0], errSink);
      break;
    }
  }
  outSink.finish();
  errSink.finish();
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = signalName(WTERMSIG(status));
  }
  return result;
}

}  // namespace fs::app::remote
