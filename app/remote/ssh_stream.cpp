// SshConnection's stream channels and SshHost::openStream: a long-lived exec
// channel per stream (NOTE [Streams] in local_host.h), polled without blocking
// under SshHost's mutex so other calls on the session go on meanwhile.
#include <libssh/server.h>  // ssh_send_keepalive is declared here, and works for clients
#include <poll.h>

#include "app/remote/shell_quote.h"
#include "app/remote/ssh_host.h"
#include "app/remote/ssh_internal.h"

namespace fs::app::remote {

using protocol::Status;
using protocol::StatusOr;

StatusOr<SshConnection::StreamChannel> SshConnection::openStream(const std::vector<std::string>& argv) {
  auto start = beginExec(argv);
  if (!start.isOk()) return start.status();
  ssh_session s = endpoint_->session;
  ssh_channel channel = nullptr;
  Status failed = Status::ok();
  {
    WatchdogScope guard(*watchdog_, ssh_get_fd(s),
                        std::chrono::seconds(connectTimeout(spec_) + aliveWindowSeconds()));
    auto lost = [&](const std::string& doing) { return sessionError(start->what, doing); };
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
    checkAlive();
    if (!connected_.load())
      return Status::ioError(failed.message() + " (connection lost; the next call reconnects)");
    return failed;
  }
  last_ignore_ = std::chrono::steady_clock::now();
  return StreamChannel{channel, generation_};
}

Status SshConnection::readStream(const StreamChannel& stream, std::string& out, std::size_t max,
                                 std::string* err, bool* eof, std::string* exit) {
  *eof = false;
  if (endpoint_ == nullptr || stream.generation != generation_ || !connected_.load())
    return Status::ioError(label() + ": connection lost while streaming; the next call reconnects");
  auto channel = static_cast<ssh_channel>(stream.channel);
  ssh_session s = endpoint_->session;
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
    checkAlive();
    return Status::ioError(label() + ": reading a stream: " + detail +
                           (connected_.load() ? "" : " (connection lost; the next call reconnects)"));
  }
  if (out.empty() && ssh_channel_is_eof(channel)) {  // SSH_EOF (or 0) and nothing left
    *eof = true;
    WatchdogScope guard(*watchdog_, ssh_get_fd(s), std::chrono::seconds(aliveWindowSeconds()));
    const int status = ssh_channel_get_exit_status(channel);
    *exit = status >= 0 ? "exited with code " + std::to_string(status) : "ended without an exit status";
    return Status::ok();
  }
  // Traffic while idle, so TCP_USER_TIMEOUT notices a dead peer (NOTE [Dead connections]).
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ignore_ >= std::chrono::seconds(aliveInterval(spec_))) {
    ssh_send_ignore(s, "");
    last_ignore_ = now;
  }
  return Status::ok();
}

void SshConnection::closeStream(const StreamChannel& stream) {
  if (endpoint_ == nullptr || stream.generation != generation_) return;  // freed with its session
  auto channel = static_cast<ssh_channel>(stream.channel);
  if (connected_.load() && ssh_is_connected(endpoint_->session) && ssh_channel_is_open(channel)) {
    WatchdogScope guard(*watchdog_, ssh_get_fd(endpoint_->session),
                        std::chrono::seconds(aliveWindowSeconds()));
    ssh_channel_close(channel);
  }
  ssh_channel_free(channel);
}

int SshConnection::socketFd() const {
  return endpoint_ != nullptr && connected_.load() ? ssh_get_fd(endpoint_->session) : -1;
}

// --- SshHost::openStream

class SshStream final : public CommandStream {
 public:
  SshStream(SshHost& host, SshConnection::StreamChannel channel, std::string what)
      : host_(host), channel_(channel), what_(std::move(what)) {}
  ~SshStream() override {
    std::lock_guard<std::mutex> lock(host_.mutex_);
    host_.connection_.closeStream(channel_);
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
        Status read = host_.connection_.readStream(channel_, got, max, &err_, &eof, &exit);
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
  SshConnection::StreamChannel channel_;
  std::string what_;
  std::string err_;
  bool done_ = false;
};

StatusOr<std::unique_ptr<CommandStream>> SshHost::openStream(const std::vector<std::string>& argv) {
  if (argv.empty() || argv.front().empty()) return Status::invalidArgument(name_ + ": empty command");
  std::lock_guard<std::mutex> lock(mutex_);
  auto channel = connection_.openStream(argv);
  if (!channel.isOk()) return channel.status();
  return std::unique_ptr<CommandStream>(
      std::make_unique<SshStream>(*this, *channel, name_ + ": '" + argv[0] + "'"));
}

}  // namespace fs::app::remote
