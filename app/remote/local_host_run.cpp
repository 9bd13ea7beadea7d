// LocalHost::run: posix_spawn of an argument vector, its stdin, stdout and
// stderr through pipes multiplexed with poll(), and the timeout / cancel that
// end its process group. LocalHost::openStream: the same child, read as it comes.
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

// Starts `exe` with argv, its stdin, stdout and stderr on the three pipes (opened
// here), in its own process group with default signal dispositions.
StatusOr<pid_t> spawnPiped(const std::vector<std::string>& argv, const std::string& exe, Pipe& in, Pipe& out,
                           Pipe& err) {
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
  return pid;
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
  auto spawned = spawnPiped(argv, exe, in, out, err);
  if (!spawned.isOk()) return spawned.status();
  const pid_t pid = *spawned;
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

// --- LocalHost::openStream

namespace {

class LocalStream final : public CommandStream {
 public:
  LocalStream(std::vector<std::string> argv, pid_t pid, Pipe& in, Pipe& out, Pipe& err)
      : what_("local: " + commandName(argv)), pid_(pid) {
    std::swap(in_, in.fd[1]);
    std::swap(out_, out.fd[0]);
    std::swap(err_, err.fd[0]);
    setNonBlocking(out_);
    setNonBlocking(err_);
  }
  ~LocalStream() override {
    // Closing its stdin and stdout ends a well-behaved command at once (EOF,
    // SIGPIPE); anything else is stopped as run() stops it.
    closeFd(in_);
    closeFd(out_);
    closeFd(err_);
    if (pid_ > 0) {
      int status = 0;
      if (!reapWithin(pid_, 1'000, &status)) stopGroup(pid_);
    }
  }
  LocalStream(const LocalStream&) = delete;
  LocalStream& operator=(const LocalStream&) = delete;

  StatusOr<std::size_t> read(std::string& out, std::size_t max, int timeout_ms) override {
    if (out_ < 0) return Status::ioError(what_ + " ended");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      const std::size_t before = out.size();
      out.resize(before + max);
      const ssize_t n = ::read(out_, out.data() + before, max);
      out.resize(before + (n > 0 ? static_cast<std::size_t>(n) : 0));
      if (n > 0) return static_cast<std::size_t>(n);
      if (n == 0) return ended();
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return Status::ioError(what_ + ": reading its output: " + errnoText(errno));
      drainErr();
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::size_t{0};
      pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
      ::poll(fds, err_ >= 0 ? 2 : 1, static_cast<int>(left.count()));
    }
  }

 private:
  static void closeFd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  void drainErr() {
    if (err_ < 0) return;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(err_, buf, sizeof buf);
      if (n > 0) {
        err_text_.append(buf, static_cast<std::size_t>(n));
        if (err_text_.size() > 4096) err_text_.erase(0, err_text_.size() - 4096);  // keep the end
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) closeFd(err_);
      return;
    }
  }
  // stdout reached EOF: how the command ended, with the end of its stderr.
  Status ended() {
    closeFd(out_);
    int status = 0;
    std::string how = "closed its output";
    if (reapWithin(pid_, 1'000, &status)) {
      pid_ = -1;
      how = WIFEXITED(status) ? "exited with code " + std::to_string(WEXITSTATUS(status))
                              : "ended by signal " + signalName(WTERMSIG(status));
    }
    if (err_ >= 0) {
      ::fcntl(err_, F_SETFL, ::fcntl(err_, F_GETFL) & ~O_NONBLOCK);  // the command is gone: read to EOF
      drainErr();
    }
    while (!err_text_.empty() && err_text_.back() == '\n') err_text_.pop_back();
    return Status::ioError(what_ + " " + how + (err_text_.empty() ? "" : ": " + err_text_));
  }

  std::string what_;
  pid_t pid_;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string err_text_;
};

}  // namespace

StatusOr<std::unique_ptr<CommandStream>> LocalHost::openStream(const std::vector<std::string>& argv) {
  if (argv.empty() || argv.front().empty()) return Status::invalidArgument("local: empty command");
  const char* pathEnv = std::getenv("PATH");
  const std::string exe = findInPath(argv.front(), pathEnv ? pathEnv : "/usr/local/bin:/usr/bin:/bin");
  if (exe.empty()) return Status::ioError("local: " + argv.front() + ": command not found");
  Pipe in, out, err;
  auto spawned = spawnPiped(argv, exe, in, out, err);
  if (!spawned.isOk()) return spawned.status();
  in.close(0);
  out.close(1);
  err.close(1);
  return std::unique_ptr<CommandStream>(std::make_unique<LocalStream>(argv, *spawned, in, out, err));
}

}  // namespace fs::app::remote
