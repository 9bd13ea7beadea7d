#include "backend/data/shards/shard_stream.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>
#include <thread>

extern char** environ;

namespace fs::data {
namespace {

using protocol::Status;
using protocol::StatusOr;

constexpr std::string_view kPipePrefix = "pipe:";

std::string errnoText(int err) {
  return std::strerror(err);
}

std::string signalText(int sig) {
  std::string out = std::to_string(sig);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
  if (const char* d = sigdescr_np(sig))
    out.append(" (").append(d).append(")");  // strsignal is not thread-safe
#endif
  return out;
}

class FileStream final : public ShardStream {
 public:
  FileStream(std::string url, int fd) : url_(std::move(url)), fd_(fd) {}
  ~FileStream() override { close(); }

  StatusOr<size_t> read(void* buf, size_t size) override {
    if (!error_.isOk()) return error_;
    for (;;) {
      ssize_t n = ::read(fd_, buf, size);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      error_ = Status::ioError("read shard '" + url_ + "': " + errnoText(errno));
      return error_;
    }
  }

  void close() override {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  const std::string& url() const override { return url_; }

 private:
  std::string url_;
  int fd_;
  Status error_;
};

class PipeStream final : public ShardStream {
 public:
  PipeStream(std::string url, pid_t pid, int out, int err, const ReadInterrupt* interrupt)
      : url_(std::move(url)),
        command_(url_.substr(kPipePrefix.size())),
        pid_(pid),
        out_(out),
        err_(err),
        interrupt_(interrupt ? interrupt->fd() : -1) {}
  ~PipeStream() override { close(); }

  StatusOr<size_t> read(void* buf, size_t size) override {
    if (!error_.isOk()) return error_;
    if (out_ < 0 || size == 0) return size_t{0};  // a 0-byte read must not look like the end
    for (;;) {
      pollfd fds[3] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}, {interrupt_, POLLIN, 0}};
      if (::poll(fds, 3, -1) < 0) {
        if (errno == EINTR) continue;
        return fail("poll: " + errnoText(errno));
      }
      if (fds[2].revents != 0) return fail("interrupted (the reader is stopping)");
      if (fds[1].revents != 0) drainStderr();
      if (fds[0].revents == 0) continue;
      ssize_t n = ::read(out_, buf, size);
      if (n > 0) return static_cast<size_t>(n);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail("read: " + errnoText(errno));
      return finishAtEnd();
    }
  }

  void close() override {
    closeFd(out_);
    if (pid_ > 0) stopChild();
    closeFd(err_);
  }

  const std::string& url() const override { return url_; }

 private:
  static void closeFd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }

  Status fail(const std::string& what) {
    error_ = Status::ioError("pipe command '" + command_ + "': " + what);
    return error_;
  }

  // stderr is non-blocking: take what is there, keep only the tail.
  void drainStderr() {
    char chunk[4096];
    while (err_ >= 0) {
      ssize_t n = ::read(err_, chunk, sizeof chunk);
      if (n > 0) {
        stderrTail_.append(chunk, static_cast<size_t>(n));
        if (stderrTail_.size() > 2 * kStderrTailBytes)
          stderrTail_.erase(0, stderrTail_.size() - kStderrTailBytes);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) closeFd(err_);  // EOF; EAGAIN just means "nothing more now"
      return;
    }
  }

  // End of stdout: wait for the command so its exit status decides between a
  // clean end and an error. stderr keeps draining meanwhile; a background
  // grandchild holding stderr open must not keep us waiting, hence the
  // non-blocking waitpid instead of reading stderr to its end. Never a
  // blocking waitpid: a command that closed its output and lingers is
  // interrupted by stop() like a quiet read (poll ignores err_ once closed).
  StatusOr<size_t> finishAtEnd() {
    closeFd(out_);
    int status = 0;
    for (;;) {
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {  // ECHILD: someone else reaped it (SIGCHLD ignored); no status to judge
        pid_ = -1;
        closeFd(err_);
        return size_t{0};
      }
      pollfd fds[2] = {{err_, POLLIN, 0}, {interrupt_, POLLIN, 0}};
      if (::poll(fds, 2, 20) > 0) {
        if (fds[1].revents != 0) return fail("interrupted (the reader is stopping)");
        if (fds[0].revents != 0) drainStderr();
      }
    }
    pid_ = -1;
    drainStderr();
    closeFd(err_);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return size_t{0};
    std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                        : "killed by signal " + signalText(WTERMSIG(status));
    std::string tail = stderrTail_.size() > kStderrTailBytes
                           ? stderrTail_.substr(stderrTail_.size() - kStderrTailBytes)
                           : stderrTail_;
    while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back()))) tail.pop_back();
    return fail(how + (tail.empty() ? std::string("; no stderr output") : "; stderr: " + tail));
  }

  bool reapNoHang() {
    for (;;) {
      pid_t r = ::waitpid(pid_, nullptr, WNOHANG);
      if (r < 0 && errno == EINTR) continue;
      return r != 0;  // reaped, or ECHILD: gone either way
    }
  }

  void stopChild() {
    ::kill(-pid_, SIGTERM);  // the group: pipelines and background jobs too
    constexpr int kStepMs = 10;
    bool gone = false;
    for (int waited = 0; !(gone = reapNoHang()) && waited < kKillGraceMs; waited += kStepMs)
      std::this_thread::sleep_for(std::chrono::milliseconds(kStepMs));
    if (!gone) {
      ::kill(-pid_, SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    } else {
      ::kill(-pid_, SIGKILL);  // stragglers that ignored SIGTERM; ESRCH when none
    }
    pid_ = -1;
  }

  std::string url_;
  std::string command_;
  pid_t pid_;
  int out_;
  int err_;
  int interrupt_;  // ReadInterrupt's eventfd, or -1 (poll ignores it)
  std::string stderrTail_;
  Status error_;
};

StatusOr<std::unique_ptr<ShardStream>> spawnPipe(const std::string& url, const ReadInterrupt* interrupt) {
  std::string command = url.substr(kPipePrefix.size());
  if (command.find_first_not_of(" \t") == std::string::npos)
    return Status::invalidArgument("shard '" + url + "': 'pipe:' needs a command");
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return Status::ioError("pipe for '" + command + "': " + errnoText(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    int e = errno;
    ::close(out[0]);
    ::close(out[1]);
    return Status::ioError("pipe for '" + command + "': " + errnoText(e));
  }
  ::fcntl(err[0], F_SETFL, O_NONBLOCK);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
  // Descriptors other code opened without O_CLOEXEC must not leak into (and
  // keep alive) a command that may outlive this shard.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group so close() can stop the whole pipeline; clean signal
  // state because worker threads may block or ignore signals.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, defaults;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  std::string sh = "sh", dashC = "-c";
  char* argv[] = {sh.data(), dashC.data(), command.data(), nullptr};
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    return Status::ioError("cannot start pipe command '" + command + "': " + errnoText(rc));
  }
  return std::unique_ptr<ShardStream>(new PipeStream(url, pid, out[0], err[0], interrupt));
}

}  // namespace

bool isPipeUrl(const std::string& url) {
  return url.starts_with(kPipePrefix);
}

StatusOr<std::unique_ptr<ShardStream>> openShardStream(const std::string& url,
                                                       const ReadInterrupt* interrupt) {
  if (isPipeUrl(url)) return spawnPipe(url, interrupt);
  return openShardFile(url);
}

StatusOr<std::unique_ptr<ShardStream>> openShardFile(const std::string& url) {
  if (url.empty()) return Status::invalidArgument("empty shard path");
  int fd = ::open(url.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    std::string msg = "open shard '" + url + "': " + errnoText(e);
    return e == ENOENT ? Status::notFound(msg) : Status::ioError(msg);
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<ShardStream>(new FileStream(url, fd));
}

}  // namespace fs::data
