// SshExec: the exec part of the SSH transport — runs argument vectors on an
// SshConnection's session, one exec channel per command (NOTE [Remote command
// lines] in shell_quote.h), and opens, polls and closes the long-lived exec
// channels of SshHost::openStream (NOTE [Streams] in local_host.h). Probes the
// login shell once per session.
//
// Owned by SshHost beside the SshConnection it holds a reference to (which
// outlives it). Thread-safety: none; called on SshConnection's one thread
// (under SshHost's mutex). Every call blocks, except readStream().
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "app/remote/remote_host.h"
#include "app/remote/shell_quote.h"
#include "app/remote/ssh_connection.h"
#include "backend/protocol/status.h"

namespace fs::app::remote {

class SshExec {
 public:
  explicit SshExec(SshConnection& connection) : connection_(connection) {}
  SshExec(const SshExec&) = delete;
  SshExec& operator=(const SshExec&) = delete;

  // Host::run (remote_host.h), connecting first when needed.
  protocol::StatusOr<CommandResult> run(const std::vector<std::string>& argv, const ExecOptions& options);

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

 private:
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

  SshConnection& connection_;
  LoginShell login_shell_ = LoginShell::kUnknown;
  std::uint64_t login_shell_generation_ = 0;             // the session login_shell_ was probed on (0: none)
  std::chrono::steady_clock::time_point last_ignore_{};  // a stream's last keepalive (readStream)
};

}  // namespace fs::app::remote
