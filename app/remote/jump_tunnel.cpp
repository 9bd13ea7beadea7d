// JumpTunnel: a direct-tcpip channel on the jump host's session, pumped to a
// socketpair the target's session runs over.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "app/remote/ssh_internal.h"

namespace fs::app::remote {

using protocol::Status;
using protocol::StatusOr;

namespace {
constexpr std::size_t kMaxPending = 1u << 20;  // per direction
constexpr std::size_t kChunk = 32768;
}  // namespace

StatusOr<std::unique_ptr<JumpTunnel>> JumpTunnel::open(std::unique_ptr<SshConnection::Endpoint> jump,
                                                       const HostSpec& jump_spec, const std::string& host,
                                                       int port) {
  std::unique_ptr<JumpTunnel> tunnel(new JumpTunnel());
  tunnel->alive_interval_ = aliveInterval(jump_spec);
  ssh_channel channel = ssh_channel_new(jump->session);
  if (channel == nullptr)
    return Status::ioError("jump host " + hostLabel(jump_spec) + ": cannot create a channel");
  int opened = SSH_ERROR;
  {
    // libssh waits for the channel's confirmation without a limit.
    SshConnection::Watchdog dog;
    WatchdogScope scope(dog, ssh_get_fd(jump->session), std::chrono::seconds(connectTimeout(jump_spec)));
    opened = ssh_channel_open_forward(channel, host.c_str(), port, "127.0.0.1", 0);
  }
  if (opened != SSH_OK) {
    const std::string error = ssh_get_error(jump->session);
    ssh_channel_free(channel);
    return Status::ioError("jump host " + hostLabel(jump_spec) + " cannot open a connection to " + host +
                           ":" + std::to_string(port) + ": " + error);
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    ssh_channel_close(channel);
    ssh_channel_free(channel);
    return Status::ioError(std::string("cannot create a socketpair: ") + std::strerror(errno));
  }
  fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK);
  tunnel->jump_ = std::move(jump);
  tunnel->channel_ = channel;
  tunnel->pump_fd_ = pair[0];
  tunnel->target_fd_ = pair[1];
  tunnel->thread_ = std::thread([t = tunnel.get()] { t->pump(); });
  return tunnel;
}

JumpTunnel::~JumpTunnel() {
  stop_ = true;
  if (thread_.joinable()) {
    // A pump blocked in ssh_channel_write on a dead jump session would never
    // return: give it a moment, then end the jump session's socket.
    for (int i = 0; i < 25 && !exited_.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!exited_.load() && ssh_get_fd(jump_->session) >= 0) shutdown(ssh_get_fd(jump_->session), SHUT_RDWR);
    thread_.join();
  }
  if (channel_ != nullptr) {
    if (ssh_is_connected(jump_->session)) ssh_channel_close(channel_);
    ssh_channel_free(channel_);
  }
  if (pump_fd_ >= 0) close(pump_fd_);
  jump_.reset();
}

void JumpTunnel::pump() {
  ssh_session jump = jump_->session;
  std::string to_remote, to_local;
  char buf[kChunk];
  bool local_eof = false, remote_eof = false;
  auto last_keepalive = std::chrono::steady_clock::now();
  while (!stop_.load()) {
    pollfd fds[2] = {};
    fds[0].fd = pump_fd_;
    fds[0].events = static_cast<short>(((!local_eof && to_remote.size() < kMaxPending) ? POLLIN : 0) |
                                       (!to_local.empty() ? POLLOUT : 0));
    fds[1].fd = ssh_get_fd(jump);
    fds[1].events = POLLIN;
    poll(fds, 2, 50);
    // target -> jump host
    if (!local_eof && to_remote.size() < kMaxPending) {
      const ssize_t n = read(pump_fd_, buf, sizeof buf);
      if (n > 0) {
        to_remote.append(buf, static_cast<std::size_t>(n));
      } else if (n == 0) {
        local_eof = true;
      } else if (errno != EAGAIN && errno != EINTR) {
        break;
      }
    }
    while (!to_remote.empty()) {
      const int n = ssh_channel_write(channel_, to_remote.data(),
                                      static_cast<uint32_t>(std::min(to_remote.size(), kChunk)));
      if (n == SSH_ERROR) {
        remote_eof = true;
        to_local.clear();
        break;
      }
      to_remote.erase(0, static_cast<std::size_t>(n));
      if (n == 0) break;
    }
    if (local_eof && to_remote.empty()) break;  // the target's session ended
    // jump host -> target
    while (!remote_eof && to_local.size() < kMaxPending) {
      const int n = ssh_channel_read_nonblocking(channel_, buf, sizeof buf, 0);
      if (n == SSH_ERROR || n == SSH_EOF || (n == 0 && ssh_channel_is_eof(channel_))) {
        remote_eof = true;
      } else if (n > 0) {
        to_local.append(buf, static_cast<std::size_t>(n));
      }
      if (n <= 0) break;
    }
    if (!to_local.empty()) {
      // send, not write: no SIGPIPE when the target's session has closed its end.
      const ssize_t n = send(pump_fd_, to_local.data(), to_local.size(), MSG_NOSIGNAL);
      if (n > 0) {
        to_local.erase(0, static_cast<std::size_t>(n));
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        break;
      }
    }
    if (remote_eof && to_local.empty()) break;
    if (!ssh_is_connected(jump)) break;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_keepalive >= std::chrono::seconds(alive_interval_)) {
      ssh_send_ignore(jump, "");  // traffic, so TCP_USER_TIMEOUT notices a dead jump host
      last_keepalive = now;
    }
  }
  // The target's session sees its socket end.
  shutdown(pump_fd_, SHUT_RDWR);
  exited_ = true;
}

}  // namespace fs::app::remote
