// Internal to fs_app_remote: the libssh-level pieces of the SSH transport
// (SshConnection, SshExec, SftpFiles). Not for other libraries (include
// ssh_host.h instead).
//
// Thread-safety: as SshConnection (one thread), except JumpTunnel's pump
// thread, which alone touches the jump session once the tunnel runs, and the
// Watchdog's thread, which only calls shutdown(2) on a socket.
#pragma once

#include <libssh/libssh.h>
#include <libssh/sftp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "app/remote/prompter.h"
#include "app/remote/ssh_config.h"
#include "app/remote/ssh_connection.h"
#include "backend/protocol/status.h"

namespace fs::app::remote {

constexpr int kDefaultAliveInterval = 15;  // seconds, when ServerAliveInterval is not set
constexpr int kDefaultConnectTimeout = 15;

inline int aliveInterval(const HostSpec& spec) {
  return spec.server_alive_interval > 0 ? spec.server_alive_interval : kDefaultAliveInterval;
}
inline int connectTimeout(const HostSpec& spec) {
  return spec.connect_timeout > 0 ? spec.connect_timeout : kDefaultConnectTimeout;
}
// "alias (user@hostname:port)".
std::string hostLabel(const HostSpec& spec);

class JumpTunnel;

// One connected, verified, authenticated session and the tunnel under it.
// The SFTP session on it is opened by SftpFiles and owned here, so that it is
// freed before the session it runs on.
struct SshConnection::Endpoint {
  ssh_session session = nullptr;
  sftp_session sftp = nullptr;         // null until SftpFiles needs one; never on a jump host's
  std::unique_ptr<JumpTunnel> tunnel;  // null for a direct TCP connection
  ~Endpoint();
};

// Connects to `spec`, through its ProxyJump hops (each resolved by
// `resolve_hop`, each connected the same way), checks the host key and
// authenticates. Gives the Prompter each hop's HostSpec::warnings not in
// `warned` yet, and adds them there.
protocol::StatusOr<std::unique_ptr<SshConnection::Endpoint>> openEndpoint(const HostSpec& spec,
                                                                          Prompter& prompter,
                                                                          const HopResolver& resolve_hop,
                                                                          std::set<std::string>& warned,
                                                                          int depth = 0);

// NOTE [Host keys] in ssh_connection.h.
protocol::Status verifyHostKey(ssh_session session, const HostSpec& spec, Prompter& prompter);
// NOTE [Authentication order] in ssh_connection.h.
protocol::Status authenticate(ssh_session session, const HostSpec& spec, Prompter& prompter);

// A direct-tcpip channel on a jump session to host:port, exposed as one end of
// a socketpair (fd()) that the target's session uses as its socket
// (SSH_OPTIONS_FD). A pump thread moves bytes both ways and sends keepalives
// on the jump session; when either side ends it closes the socketpair.
class JumpTunnel {
 public:
  static protocol::StatusOr<std::unique_ptr<JumpTunnel>> open(std::unique_ptr<SshConnection::Endpoint> jump,
                                                              const HostSpec& jump_spec,
                                                              const std::string& host, int port);
  ~JumpTunnel();
  int fd() const { return target_fd_; }  // owned by the target's ssh_session once passed to it

 private:
  JumpTunnel() = default;
  void pump();

  std::unique_ptr<SshConnection::Endpoint> jump_;
  ssh_channel channel_ = nullptr;
  int pump_fd_ = -1, target_fd_ = -1;
  int alive_interval_ = kDefaultAliveInterval;
  std::atomic<bool> stop_{false}, exited_{false};
  std::thread thread_;
};

// Shuts a socket down when a call overruns its deadline, so that a libssh
// call blocked on a dead peer returns.
class SshConnection::Watchdog {
 public:
  Watchdog();
  ~Watchdog();
  void arm(int fd, std::chrono::milliseconds within);
  // True when the deadline passed (and the socket was shut down).
  bool disarm();
  // Whether the last armed deadline passed (until the next arm()).
  bool fired();

 private:
  void loop();
  std::mutex mutex_;
  std::condition_variable cv_;
  int fd_ = -1;
  bool armed_ = false, fired_ = false, quit_ = false;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

// Arms a watchdog for one scope.
class WatchdogScope {
 public:
  WatchdogScope(SshConnection::Watchdog& dog, int fd, std::chrono::milliseconds within) : dog_(dog) {
    dog_.arm(fd, within);
  }
  ~WatchdogScope() { dog_.disarm(); }
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  SshConnection::Watchdog& dog_;
};

}  // namespace fs::app::remote
