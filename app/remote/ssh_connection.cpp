// SshConnection: connecting (hops, host keys, authentication), the watchdog,
// noticing a dead session. The ProxyJump tunnel is in jump_tunnel.cpp, host
// keys in host_key_check.cpp, authentication in ssh_auth.cpp; exec and SFTP
// are the parts beside it (ssh_exec.h, sftp_files.h).
#include "app/remote/ssh_connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "app/remote/known_hosts.h"
#include "app/remote/ssh_internal.h"

namespace fs::app::remote {

using protocol::Status;
using protocol::StatusOr;

namespace {

// NOTE [Cipher order]: libssh offers chacha20-poly1305 first, as OpenSSH does.
// With AES instructions (every x86-64 and ARMv8 server we meet) AES-GCM moves the
// same bytes for a fraction of the CPU on both ends, and following a run is
// mostly bulk SFTP reads (bench_remote_follow: the attach to 1M events is CPU-
// bound, here and in sshd). Every cipher of the default list stays on offer, so a
// server that lacks AES-GCM still agrees on one.
constexpr const char* kCipherOrder =
    "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,"
    "aes256-ctr";

// NOTE [Dead connections]: the kernel notices a silent peer.
void setTcpKeepalive(int fd, const HostSpec& spec) {
  const int interval = aliveInterval(spec);
  const int count = spec.server_alive_count_max > 0 ? spec.server_alive_count_max : 3;
  const int on = 1;
  const unsigned int user_timeout = static_cast<unsigned int>(interval * count * 1000);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
}

}  // namespace

SshConnection::Endpoint::~Endpoint() {
  if (sftp != nullptr) sftp_free(sftp);
  if (session != nullptr) {
    if (ssh_is_connected(session)) ssh_disconnect(session);
    ssh_free(session);  // closes the socket (also one passed with SSH_OPTIONS_FD)
  }
  tunnel.reset();
}

StatusOr<std::unique_ptr<SshConnection::Endpoint>> openEndpoint(const HostSpec& spec, Prompter& prompter,
                                                                const HopResolver& resolve_hop,
                                                                std::set<std::string>& warned, int depth) {
  const std::string label = hostLabel(spec);
  for (const std::string& warning : spec.warnings) {
    if (warned.insert(warning).second) prompter.warning(warning);
  }
  if (depth > 8)
    return Status::invalidArgument(label + ": more than 8 ProxyJump hops (a loop in ssh_config?)");
  auto endpoint = std::make_unique<SshConnection::Endpoint>();
  if (!spec.proxy_jump.empty()) {
    if (!resolve_hop) return Status::invalidArgument(label + ": ProxyJump without a way to resolve the hops");
    // OpenSSH's semantics: "a,b,c" reaches the target through c, which is
    // reached through "a,b"; a single hop keeps its own ProxyJump.
    const std::string& last = spec.proxy_jump.back();
    auto jump_spec = resolve_hop(last);
    if (!jump_spec.isOk())
      return Status::ioError(label + ": ProxyJump " + last + ": " + jump_spec.status().message());
    if (spec.proxy_jump.size() > 1)
      jump_spec->proxy_jump.assign(spec.proxy_jump.begin(), spec.proxy_jump.end() - 1);
    auto jump = openEndpoint(*jump_spec, prompter, resolve_hop, warned, depth + 1);
    if (!jump.isOk()) return Status::ioError(label + ": through jump host " + jump.status().message());
    auto tunnel = JumpTunnel::open(std::move(*jump), *jump_spec, spec.hostname, spec.port);
    if (!tunnel.isOk()) return Status::ioError(label + ": " + tunnel.status().message());
    endpoint->tunnel = std::move(*tunnel);
  }
  ssh_session s = ssh_new();
  if (s == nullptr) return Status::ioError(label + ": cannot create an SSH session");
  endpoint->session = s;
  if (endpoint->tunnel) {
    socket_t fd = endpoint->tunnel->fd();
    ssh_options_set(s, SSH_OPTIONS_FD, &fd);
  }
  // Only what we pass: never the user's files (NOTE [Why our own ssh_config parser]).
  const bool no = false;
  const int port = spec.port;
  const long timeout = connectTimeout(spec);
  const int nodelay = 1;
  ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &no);
  ssh_options_set(s, SSH_OPTIONS_HOST, spec.hostname.c_str());
  ssh_options_set(s, SSH_OPTIONS_PORT, &port);
  ssh_options_set(s, SSH_OPTIONS_USER, spec.user.c_str());
  ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout);
  ssh_options_set(s, SSH_OPTIONS_NODELAY, &nodelay);
  ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, "/dev/null");
  ssh_options_set(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null");
  ssh_options_set(s, SSH_OPTIONS_CIPHERS_C_S, kCipherOrder);
  ssh_options_set(s, SSH_OPTIONS_CIPHERS_S_C, kCipherOrder);
  // NOTE [Host keys]: ask for a key of a type known_hosts holds for this host
  // (libssh would order by its own known_hosts file, which is /dev/null here).
  // An unreadable file is reported by verifyHostKey.
  std::vector<std::string> files = spec.user_known_hosts_files;
  files.insert(files.end(), spec.global_known_hosts_files.begin(), spec.global_known_hosts_files.end());
  auto stored = storedHostKeys(files, spec.hostname, spec.port);
  const std::string algorithms =
      hostKeyAlgorithmsPreferring(stored.isOk() ? *stored : std::vector<StoredHostKey>{});
  if (ssh_options_set(s, SSH_OPTIONS_HOSTKEYS, algorithms.c_str()) != SSH_OK)
    return Status::ioError(label + ": cannot set the host key algorithms: " + ssh_get_error(s));
  if (ssh_connect(s) != SSH_OK) return Status::ioError(label + ": cannot connect: " + ssh_get_error(s));
  if (!endpoint->tunnel) setTcpKeepalive(ssh_get_fd(s), spec);
  Status verified = verifyHostKey(s, spec, prompter);
  if (!verified.isOk()) return verified;
  Status authenticated = authenticate(s, spec, prompter);
  if (!authenticated.isOk()) return authenticated;
  return endpoint;
}

// --- Watchdog

SshConnection::Watchdog::Watchdog() : thread_([this] { loop(); }) {}

SshConnection::Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void SshConnection::Watchdog::arm(int fd, std::chrono::milliseconds within) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fd_ = fd;
    armed_ = true;
    fired_ = false;
    deadline_ = std::chrono::steady_clock::now() + within;
  }
  cv_.notify_all();
}

bool SshConnection::Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
  return fired_;
}

bool SshConnection::Watchdog::fired() {
  std::lock_guard<std::mutex> lock(mutex_);
  return fired_;
}

void SshConnection::Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!quit_) {
    if (!armed_) {
      cv_.wait(lock);
      continue;
    }
    if (std::chrono::steady_clock::now() >= deadline_) {
      shutdown(fd_, SHUT_RDWR);  // the blocked libssh call sees the socket end
      fired_ = true;
      armed_ = false;
      continue;
    }
    cv_.wait_until(lock, deadline_);
  }
}

// --- SshConnection

SshConnection::SshConnection(HostSpec spec, std::shared_ptr<Prompter> prompter, HopResolver resolve_hop)
    : spec_(std::move(spec)),
      prompter_(std::move(prompter)),
      resolve_hop_(std::move(resolve_hop)),
      watchdog_(std::make_unique<Watchdog>()) {}

SshConnection::~SshConnection() {
  disconnect();
}

std::string SshConnection::label() const {
  return hostLabel(spec_);
}

int SshConnection::aliveWindowSeconds() const {
  return aliveInterval(spec_) * (spec_.server_alive_count_max > 0 ? spec_.server_alive_count_max : 3);
}

Status SshConnection::connect() {
  if (endpoint_ != nullptr && connected_.load()) return Status::ok();
  disconnect();
  auto endpoint = openEndpoint(spec_, *prompter_, resolve_hop_, warned_);
  if (!endpoint.isOk()) return endpoint.status();
  endpoint_ = std::move(*endpoint);
  ++generation_;
  connected_ = true;
  return Status::ok();
}

void SshConnection::disconnect() {
  const bool dead = endpoint_ != nullptr && (!connected_.load() || !ssh_is_connected(endpoint_->session));
  if (dead && ssh_get_fd(endpoint_->session) >= 0) {
    // Nothing sent on a dead session may block the teardown.
    shutdown(ssh_get_fd(endpoint_->session), SHUT_RDWR);
  }
  endpoint_.reset();  // the SFTP session first, then the session (~Endpoint)
  connected_ = false;
}

int SshConnection::socketFd() const {
  return endpoint_ != nullptr && connected_.load() ? ssh_get_fd(endpoint_->session) : -1;
}

Status SshConnection::sessionError(const std::string& what, const std::string& doing) const {
  const std::string detail = watchdog_->fired() ? "no answer in time" : ssh_get_error(endpoint_->session);
  return Status::ioError(what + ": " + doing + ": " + detail);
}

void SshConnection::checkAlive() {
  if (endpoint_ == nullptr) return;
  if (watchdog_->fired() || !ssh_is_connected(endpoint_->session) ||
      ssh_get_status(endpoint_->session) & (SSH_CLOSED | SSH_CLOSED_ERROR)) {
    connected_ = false;
    disconnect();
  }
}

}  // namespace fs::app::remote
