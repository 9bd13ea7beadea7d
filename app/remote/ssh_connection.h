// SshConnection: the session core of the SSH transport — one authenticated
// libssh session to one host (libssh 0.10), through ProxyJump hops when
// configured, its watchdog, and noticing that it died. The parts that carry
// work on it hold a reference: SshExec (ssh_exec.h) runs argument vectors,
// SftpFiles (sftp_files.h) does file operations over one reused SFTP
// session. SshHost (ssh_host.h) owns the three and is the thread-safe Host.
//
// Connecting verifies the host key of every hop against known_hosts ourselves
// (known_hosts.h), asking the Prompter about unknown keys; a changed or
// revoked key is refused without asking (NOTE [Host keys]). Authentication:
// the agent, then the identity files (NOTE [Authentication order]).
// A call on a connection found dead returns kIOError and leaves connected()
// false; the next call reconnects (NOTE [Dead connections]).
//
// Thread-safety: none; one thread at a time (SshHost holds a mutex), and the
// parts above call it on that thread. The jump tunnels run their own pump
// threads and the watchdog its timer thread, owned here. connected() may be
// read from any thread. Every call blocks.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "app/remote/prompter.h"
#include "app/remote/ssh_config.h"
#include "backend/protocol/status.h"

namespace fs::app::remote {

// NOTE [Host keys]
// Every hop's key is looked up in the hop's UserKnownHostsFile and
// GlobalKnownHostsFile (known_hosts.h), under the name ssh uses
// ("[hostname]:port" unless port 22), so files written by OpenSSH and by us
// are interchangeable. Before the key exchange we ask for the key types those
// files hold for the hop first (SSH_OPTIONS_HOSTKEYS, as OpenSSH orders its
// HostKeyAlgorithms), so that a server with several host keys shows the one
// we know. Known: connect. Changed or revoked: refuse, naming the host, the
// stored key and known_hosts file:line, without asking — a dialog would train
// people to click through an attack. Known only with other key types (the
// server offers none of them): never the plain "unknown host" question; with
// StrictHostKeyChecking=yes refuse, else ask a kOtherType question that names
// the stored keys and their file:line, as OpenSSH warns — or refuse the same
// way when the Prompter cannot ask it (Prompter::asksAbout). Unknown: with
// StrictHostKeyChecking=yes refuse; otherwise ask the Prompter (even for
// "no" and "accept-new": nothing is accepted silently). "Accept once" is
// remembered for this process (reconnects do not ask again), but never
// counts under StrictHostKeyChecking=yes, which is checked first; "accept and
// save" also appends to the first UserKnownHostsFile. HostSpec::warnings
// (ignored config keywords) are given to the Prompter once per connection.
//
// NOTE [Authentication order]
// Like ssh: the agent (IdentityAgent, else SSH_AUTH_SOCK; skipped with
// IdentitiesOnly yes, which here means "only the files"), then each
// IdentityFile that exists; an encrypted one is offered by its .pub first and
// the Prompter is asked for the passphrase only when the server would accept
// it (or there is no .pub). Failure names every key tried and why.
//
// NOTE [Dead connections]
// libssh has no keepalive of its own and its SFTP calls wait forever. We set
// TCP keepalive and TCP_USER_TIMEOUT on the socket from ServerAliveInterval x
// ServerAliveCountMax (defaults 15 s x 3), send an SSH ignore message while a
// command runs, and bound every call with a watchdog that shuts the socket
// down when the call overruns (SFTP: ConnectTimeout + the alive window; exec:
// its timeout + the window). A failed call closes the session; the next call
// connects again, and the jump tunnels with it.

// Resolves a ProxyJump hop ("[user@]host[:port]") into its HostSpec; usually
// SshConfig::resolve of the config the destination came from.
using HopResolver = std::function<protocol::StatusOr<HostSpec>(const std::string& hop)>;

class SshConnection {
 public:
  struct Endpoint;  // one authenticated session (+ the tunnel it runs through); ssh_internal.h
  class Watchdog;   // ssh_internal.h

  // REQUIRES: prompter not null.
  SshConnection(HostSpec spec, std::shared_ptr<Prompter> prompter, HopResolver resolve_hop);
  ~SshConnection();
  SshConnection(const SshConnection&) = delete;
  SshConnection& operator=(const SshConnection&) = delete;

  const HostSpec& spec() const { return spec_; }
  // Connects (all hops, host keys, authentication) unless connected.
  protocol::Status connect();
  // Frees the session (its SFTP session and channels with it).
  void disconnect();
  bool connected() const { return connected_.load(); }

  // For the parts (SshExec, SftpFiles). REQUIRES for endpoint(): hasSession().
  bool hasSession() const { return endpoint_ != nullptr; }
  Endpoint& endpoint() { return *endpoint_; }
  Watchdog& watchdog() { return *watchdog_; }
  // Counts sessions: state tied to one session (a stream's channel, the
  // probed login shell) records the generation it belongs to.
  std::uint64_t generation() const { return generation_; }
  int socketFd() const;  // -1 when not connected
  // "<what>: <doing>: <libssh's error, or 'no answer in time' when the watchdog fired>".
  protocol::Status sessionError(const std::string& what, const std::string& doing) const;
  // After a failed call: is the session still usable? If not, closes it.
  void checkAlive();
  std::string label() const;  // "alias (user@host:port)"
  // ServerAliveInterval x ServerAliveCountMax, in seconds (NOTE [Dead connections]).
  int aliveWindowSeconds() const;

 private:
  HostSpec spec_;
  std::shared_ptr<Prompter> prompter_;
  HopResolver resolve_hop_;
  std::unique_ptr<Endpoint> endpoint_;
  std::unique_ptr<Watchdog> watchdog_;
  std::uint64_t generation_ = 0;
  std::atomic<bool> connected_{false};
  std::set<std::string> warned_;  // the config warnings the Prompter was given (NOTE [Host keys])
};

}  // namespace fs::app::remote
