// SshConnection: one SSH session to one host (libssh 0.10), through ProxyJump
// hosts when configured, carrying many short-lived channels: exec of argument
// vectors and SFTP (one SFTP session, reused). SshHost (ssh_host.h) is the
// thread-safe Host made of it.
//
// Connecting verifies the host key of every hop against known_hosts ourselves
// (known_hosts.h), asking the Prompter about unknown keys; a changed or
// revoked key is refused without asking (NOTE [Host keys]). Authentication:
// the agent, then the identity files (NOTE [Authentication order]).
// A call on a connection found dead returns kIOError and leaves connected()
// false; the next call reconnects (NOTE [Dead connections]).
//
// Thread-safety: none; one thread at a time (SshHost holds a mutex). The
// jump tunnels run their own pump threads, owned here. connected() may be
// read from any thread. Every call blocks.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "app/remote/prompter.h"
#include "app/remote/remote_host.h"
#include "app/remote/shell_quote.h"
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
  // REQUIRES: prompter not null.
  SshConnection(HostSpec spec, std::shared_ptr<Prompter> prompter, HopResolver resolve_hop);
  ~SshConnection();
  SshConnection(const SshConnection&) = delete;
  SshConnection& operator=(const SshConnection&) = delete;

  const HostSpec& spec() const { return spec_; }
  // Connects (all hops, host keys, authentication) unless connected.
  protocol::Status connect();
  void disconnect();
  bool connected() const { return connected_.load(); }

  // Host's operations (remote_host.h), connecting first when needed.
  protocol::StatusOr<CommandResult> run(const std::vector<std::string>& argv, const ExecOptions& options);
  protocol::StatusOr<std::string> readFile(const std::string& path, std::uint64_t offset, std::size_t max);
  protocol::StatusOr<std::vector<std::string>> readRanges(const std::string& path,
                                                          const std::vector<ByteRange>& ranges);
  protocol::StatusOr<FileInfo> stat(const std::string& path);
  protocol::StatusOr<std::vector<FileInfo>> list(const std::string& dir);
  protocol::Status writeFileAtomic(const std::string& path, std::string_view bytes, std::uint32_t mode);
  protocol::StatusOr<bool> writeFileIfAbsent(const std::string& path, std::string_view bytes,
                                             std::uint32_t mode);
  protocol::Status makeDirs(const std::string& path);
  protocol::Status remove(const std::string& path);

  // Long-lived exec channels (SshHost::openStream, NOTE [Streams] in local_host.h).
  // A channel belongs to the session of its generation: once that session is
  // closed (a reconnect frees it with its channels) the calls say "connection lost".
  struct StreamChannel {
    void* channel = nullptr;  // ssh_channel
    std::uint64_t generation = 0;
  };
  protocol::StatusOr<StreamChannel> openStream(const std::vector<std::string>& argv);
  // What the channel has now, without waiting: bytes of stdout appended to `out`
  // (at most `max`), its stderr's end kept in `*err`; *eof once stdout ended, and
  // *exit then says how the command ended.
  protocol::Status readStream(const StreamChannel& stream, std::string& out, std::size_t max,
                              std::string* err, bool* eof, std::string* exit);
  void closeStream(const StreamChannel& stream);
  int socketFd() const;  // -1 when not connected

  struct Endpoint;  // one authenticated session (+ the tunnel it runs through)
  class Watchdog;

 private:
  protocol::StatusOr<bool> writeFile(const std::string& path, std::string_view bytes, std::uint32_t mode,
                                     bool replace);
  protocol::Status ensureSftp();
  protocol::Status sftpCall(const std::string& what, std::size_t bytes,
                            const std::function<protocol::Status(void* sftp, bool* io_failed)>& body);
  // An exec's start, shared by run() and openStream(): the quoted command line,
  // connected, and "alias (user@host:port): 'argv0'" for messages.
  struct ExecStart {
    std::string line;
    std::string what;
  };
  protocol::StatusOr<ExecStart> beginExec(const std::vector<std::string>& argv);
  // Runs an already built line (run()'s body; the login shell probe).
  protocol::StatusOr<CommandResult> runLine(const ExecStart& start, const ExecOptions& options);
  // The login shell's dialect, probed once per session (NOTE [Remote command
  // lines]); kUnsupported naming the shell when it is not one we can quote for.
  // REQUIRES: connected.
  protocol::StatusOr<LoginShell> loginShell();
  // "<what>: <doing>: <libssh's error, or 'no answer in time' when the watchdog fired>".
  protocol::Status sessionError(const std::string& what, const std::string& doing) const;
  // After a failed call: is the session still usable? If not, closes it.
  void checkAlive();
  std::string label() const;  // "alias (user@host:port)"
  int aliveWindowSeconds() const;

  HostSpec spec_;
  std::shared_ptr<Prompter> prompter_;
  HopResolver resolve_hop_;
  std::unique_ptr<Endpoint> endpoint_;
  std::unique_ptr<Watchdog> watchdog_;
  void* sftp_ = nullptr;          // sftp_session
  std::uint64_t generation_ = 0;  // counts sessions; a stream's channel lives in one
  LoginShell login_shell_ = LoginShell::kUnknown;
  std::uint64_t login_shell_generation_ = 0;  // the session login_shell_ was probed on (0: none)
  std::chrono::steady_clock::time_point last_ignore_{};
  std::atomic<bool> connected_{false};
  std::set<std::string> warned_;  // the config warnings the Prompter was given (NOTE [Host keys])
};

}  // namespace fs::app::remote
