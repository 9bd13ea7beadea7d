// SshExec's stream channels and SshHost::openStream: a long-lived exec
// channel per stream (NOTE [Streams] in local_host.h), polled without blocking
// under SshHost's mutex so other calls on the session go on meanwhile.
#include <libssh/server.h>  // ssh_send_keepalive is declared here, and works for clients
#include <poll.h>

#include "app/remote/shell_quote.h"
#include "app/remote/ssh_exec.h"
#include "app/remote/ssh_host.h"
#include "app/remote/ssh_internal.h"

namespace fs::app::remote {

using protocol::Status;
using protocol::StatusOr;

StatusOr<SshExec::StreamChannel> SshExec::openStream(const std::vector<std::string>& argv) {
  auto start = beginExec(argv);
  if (!start.isOk()) return start.status();
  ssh_session s = connection_.endpoint().session;
  ssh_channel channel = nullptr;
  Status failed = Status::ok();
  {
    WatchdogScope guard(
        connection_.watchdog(), ssh_get_fd(s),
        std::chrono::seconds(connectTimeout(connection_.spec()) + connection_.aliveWindowSeconds()));
    auto lost = [&](const std::string& doing) { return connection_.sessionError(start->what, doing); };
    channel = ssh_channel_new(s);
    if (channel == nullptr) {
      failed = lost("cannot create a channel");
    } else if (ssh_channel_open_session(channel) != SSH_OK) {
      failed = lost("cannot open a session channel");
    } else if (ssh_channel_request_exec(channel, start->line.c_str()) != SSH_OK) {
      failed = lost("exec request refused");
    }
  }
  if (!failed.isOk()) {
    if (channel != nullptr) ssh_channel_free(channel);
    connection_.checkAlive();
    if (!connection_.connected())
      return Status::ioError(failed.message() + " (connection lost; the next call reconnects)");
    return failed;
  }
  last_ignore_ = std::chrono::steady_clock::now();
  return StreamChannel{channel, connection_.generation()};
}

Status SshExec::readStream(const StreamChannel& stream, std::string& out, std::size_t max, std::string* err,
                           bool* eof, std::string* exit) {
  *eof = false;
  if (!connection_.hasSession() || stream.generation != connection_.generation() || !connection_.connected())
    return Status::ioError(connection_.label() +
                           ": connection lost while streaming; the next call reconnects");
  auto channel = static_cast<ssh_channel>(stream.channel);
  ssh_session s = connection_.endpoint().session;
  char buf[32768];
  int n = 0;
  while (out.size() < max) {
    n = ssh_channel_read_nonblocking(channel, buf,
                                     static_cast<uint32_t>(std::min(sizeof buf, max - out.size())), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  int m = 0;
  while ((m = ssh_channel_read_nonblocking(channel, buf, sizeof buf, 1)) > 0) {
    err->append(buf, static_cast<std::size_t>(m));
    if (err->size() > 4096) err->erase(0, err->size() - 4096);  // keep the end
  }
  if (n == SSH_ERROR || m == SSH_ERROR) {
    const std::string detail = ssh_get_error(s);
    connection_.checkAlive();
    return Status::ioError(connection_.label() + ": reading a stream: " + detail +
                           (connection_.connected() ? "" : " (connection lost; the next call reconnects)"));
  }
  if (out.empty() && ssh_channel_is_eof(channel)) {  // SSH_EOF (or 0) and nothing left
    *eof = true;
    WatchdogScope guard(connection_.watchdog(), ssh_get_fd(s),
                        std::chrono::seconds(connection_.aliveWindowSeconds()));
    const int status = ssh_channel_get_exit_status(channel);
    *exit = status >= 0 ? "exited with code " + std::to_string(status) : "ended without an exit status";
    return Status::ok();
  }
  // Traffic while idle, so TCP_USER_TIMEOUT notices a dead peer (NOTE [Dead connections]).
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ignore_ >= std::chrono::seconds(aliveInterval(connection_.spec()))) {
    ssh_send_ignore(s, "");
    last_ignore_ = now;
  }
  return Status::ok();
}

void SshExec::closeStream(const StreamChannel& stream) {
  if (!connection_.hasSession() || stream.generation != connection_.generation())
    return;  // freed with its session
  auto channel = static_cast<ssh_channel>(stream.channel);
  if (connection_.connected() && ssh_is_connected(connection_.endpoint().session) &&
      ssh_channel_is_open(channel)) {
    WatchdogScope guard(connection_.watchdog(), ssh_get_fd(connection_.endpoint().session),
                        std::chrono::seconds(connection_.aliveWindowSeconds()));
    ssh_channel_close(channel);
  }
  ssh_channel_free(channel);
}

// --- SshHost::openStream

class SshStream final : public CommandStream {
 public:
  SshStream(SshHost& host, SshExec::StreamChannel channel, std::string what)
      : host_(host), channel_(channel), what_(std::move(what)) {}
  ~SshStream() override {
    std::lock_guard<std::mutex> lock(host_.mutex_);
    host_.exec_.closeStream(channel_);
  }
  SshStream(const SshStream&) = delete;
  SshStream& operator=(const SshStream&) = delete;

  StatusOr<std::size_t> read(std::string& out, std::size_t max, int timeout_ms) override {
    if (done_) return Status::ioError(what_ + " ended");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      const std::size_t before = out.size();
      bool eof = false;
      std::string exit;
      int fd = -1;
      {
        std::lock_guard<std::mutex> lock(host_.mutex_);
        std::string got;
        Status read = host_.exec_.readStream(channel_, got, max, &err_, &eof, &exit);
        if (!read.isOk()) {
          done_ = true;
          return Status::ioError(what_ + ": " + read.message());
        }
        out.append(got);
        fd = host_.connection_.socketFd();
      }
      if (out.size() > before) return out.size() - before;
      if (eof) {
        done_ = true;
        while (!err_.empty() && err_.back() == '\n') err_.pop_back();
        return Status::ioError(what_ + " " + exit + (err_.empty() ? "" : ": " + err_));
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::size_t{0};
      // Another thread's call may have taken our bytes off the socket into the
      // channel's buffer: wake at least every 10 ms to look.
      pollfd pfd{fd, POLLIN, 0};
      ::poll(&pfd, fd >= 0 ? 1 : 0, static_cast<int>(std::min<long long>(left.count(), 10)));
    }
  }

 private:
  SshHost& host_;
  SshExec::StreamChannel channel_;
  std::string what_;
  std::string err_;
  bool done_ = false;
};

StatusOr<std::unique_ptr<CommandStream>> SshHost::openStream(const std::vector<std::string>& argv) {
  if (argv.empty() || argv.front().empty()) return Status::invalidArgument(name_ + ": empty command");
  std::lock_guard<std::mutex> lock(mutex_);
  auto channel = exec_.openStream(argv);
  if (!channel.isOk()) return channel.status();
  return std::unique_ptr<CommandStream>(
      std::make_unique<SshStream>(*this, *channel, name_ + ": '" + argv[0] + "'"));
}

}  // namespace fs::app::remote
