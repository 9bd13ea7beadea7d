// SshExec::run: one exec channel per command (NOTE [Remote command lines]);
// the login shell probe. The stream channels are in ssh_stream.cpp.
#include "app/remote/ssh_exec.h"

#include <libssh/callbacks.h>
#include <libssh/server.h>  // ssh_send_keepalive is declared here, and works for clients
#include <poll.h>

#include "app/remote/shell_quote.h"
#include "app/remote/ssh_internal.h"

namespace fs::app::remote {

using protocol::Status;
using protocol::StatusOr;

namespace {

struct ExitState {
  std::string signal;
};

void onExitSignal(ssh_session, ssh_channel, const char* signal, int, const char*, const char*,
                  void* userdata) {
  static_cast<ExitState*>(userdata)->signal = signal != nullptr ? signal : "?";
}

void appendCapped(std::string& to, const char* data, int n, std::size_t max, bool* cut) {
  const std::size_t room = to.size() < max ? max - to.size() : 0;
  const std::size_t take = std::min<std::size_t>(room, static_cast<std::size_t>(n));
  to.append(data, take);
  if (take < static_cast<std::size_t>(n)) *cut = true;
}

struct ChannelCloser {
  ssh_channel channel;
  ~ChannelCloser() {
    if (channel == nullptr) return;
    if (ssh_is_connected(ssh_channel_get_session(channel)) && ssh_channel_is_open(channel))
      ssh_channel_close(channel);
    ssh_channel_free(channel);
  }
};

}  // namespace

StatusOr<SshExec::ExecStart> SshExec::beginExec(const std::vector<std::string>& argv) {
  auto inner = shellCommand(argv);  // a bad argv is refused before connecting
  if (!inner.isOk()) return Status::invalidArgument(connection_.label() + ": " + inner.status().message());
  Status connected = connection_.connect();
  if (!connected.isOk()) return connected;
  auto shell = loginShell();
  if (!shell.isOk()) return shell.status();
  auto line = loginShellCommand(argv, *shell);
  if (!line.isOk()) return Status::invalidArgument(connection_.label() + ": " + line.status().message());
  return ExecStart{std::move(line.value()), connection_.label() + ": '" + argv[0] + "'"};
}

StatusOr<LoginShell> SshExec::loginShell() {
  if (login_shell_generation_ == connection_.generation()) return login_shell_;
  ExecOptions options;
  options.timeout_ms = connectTimeout(connection_.spec()) * 1000;
  auto result =
      runLine(ExecStart{kLoginShellProbe, connection_.label() + ": the login shell probe"}, options);
  if (!result.isOk()) return result.status();
  auto probe = parseLoginShellProbe(result->out);
  if (!probe.isOk() || result->exit_code != 0) {
    const std::string err = result->err.substr(0, 300);
    return Status::ioError(connection_.label() + ": the login shell probe (" + kLoginShellProbe +
                           ") failed with exit code " + std::to_string(result->exit_code) +
                           (err.empty() ? "" : ": '" + err + "'") +
                           (probe.isOk() ? "" : "; " + probe.status().message()));
  }
  if (probe->shell == LoginShell::kUnknown) {
    const LoginShell named = loginShellOfPath(probe->path);
    std::string why;
    if (named == LoginShell::kUnknown) {
      why = "it is not a shell whose quoting we know (POSIX sh family, fish, csh, tcsh)";
    } else {
      why = std::string("SHELL names a ") + loginShellName(named) +
            " shell but the command line was parsed as " +
            (probe->parsed == LoginShell::kUnknown ? std::string("neither POSIX sh, fish nor csh")
                                                   : std::string(loginShellName(probe->parsed)));
    }
    return Status::unsupported(connection_.label() + ": login shell '" + probe->path + "': " + why +
                               "; no command is sent to it (NOTE [Remote command lines])");
  }
  login_shell_ = probe->shell;
  login_shell_generation_ = connection_.generation();
  return login_shell_;
}

StatusOr<CommandResult> SshExec::run(const std::vector<std::string>& argv, const ExecOptions& options) {
  auto start = beginExec(argv);
  if (!start.isOk()) return start.status();
  return runLine(*start, options);
}

StatusOr<CommandResult> SshExec::runLine(const ExecStart& start, const ExecOptions& options) {
  const std::string& what = start.what;
  ssh_session s = connection_.endpoint().session;
  // A failure of the session: noted here, judged (checkAlive) once the
  // channel is freed.
  bool io_failed = false;
  auto lost = [&](const std::string& doing) {
    io_failed = true;
    return connection_.sessionError(what, doing);
  };
  auto attempt = [&]() -> StatusOr<CommandResult> {
    WatchdogScope guard(connection_.watchdog(), ssh_get_fd(s),
                        std::chrono::milliseconds(options.timeout_ms) +
                            std::chrono::seconds(connection_.aliveWindowSeconds()));
    ChannelCloser channel{ssh_channel_new(s)};
    if (channel.channel == nullptr) return lost("cannot create a channel");
    ExitState exit_state;
    ssh_channel_callbacks_struct callbacks{};
    callbacks.userdata = &exit_state;
    callbacks.channel_exit_signal_function = onExitSignal;
    ssh_callbacks_init(&callbacks);
    ssh_set_channel_callbacks(channel.channel, &callbacks);
    if (ssh_channel_open_session(channel.channel) != SSH_OK) return lost("cannot open a session channel");
    if (ssh_channel_request_exec(channel.channel, start.line.c_str()) != SSH_OK)
      return lost("exec request refused");
    for (std::size_t done = 0; done < options.stdin_data.size();) {
      const int n = ssh_channel_write(
          channel.channel, options.stdin_data.data() + done,
          static_cast<uint32_t>(std::min<std::size_t>(options.stdin_data.size() - done, 32768)));
      if (n == SSH_ERROR) return lost("cannot write stdin");
      done += static_cast<std::size_t>(n);
    }
    ssh_channel_send_eof(channel.channel);

    CommandResult result;
    bool out_cut = false, err_cut = false;
    char buf[32768];
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + std::chrono::milliseconds(options.timeout_ms);
    auto last_keepalive = start;
    std::string ended;  // "timed out" or "cancelled"
    while (true) {
      // Drain what libssh has (it reads the socket first), then wait on the
      // socket itself: read_timeout would sleep its whole timeout at times.
      bool progress = false;
      int n = 0, m = 0;
      while ((n = ssh_channel_read_nonblocking(channel.channel, buf, sizeof buf, 0)) > 0) {
        appendCapped(result.out, buf, n, options.max_output, &out_cut);
        progress = true;
      }
      while ((m = ssh_channel_read_nonblocking(channel.channel, buf, sizeof buf, 1)) > 0) {
        appendCapped(result.err, buf, m, options.max_output, &err_cut);
        progress = true;
      }
      if (n == SSH_ERROR || m == SSH_ERROR) return lost("reading its output");
      if (!progress && ssh_channel_is_eof(channel.channel)) break;  // both streams say SSH_EOF (or 0) now
      if (!progress) {
        pollfd pfd{ssh_get_fd(s), POLLIN, 0};
        poll(&pfd, 1, 100);
      }
      const auto now = std::chrono::steady_clock::now();
      if (options.cancel != nullptr && options.cancel->load()) {
        ended = "cancelled";
        break;
      }
      if (now >= deadline) {
        ended = "timed out after " + std::to_string(options.timeout_ms) + " ms";
        break;
      }
      if (now - last_keepalive >= std::chrono::seconds(aliveInterval(connection_.spec()))) {
        ssh_send_ignore(s, "");  // traffic, so TCP_USER_TIMEOUT notices a dead peer
        last_keepalive = now;
      }
    }
    if (!ended.empty()) {
      ssh_channel_request_send_signal(channel.channel, "KILL");
      return Status::ioError(what + ": " + ended + " (the command was sent SIGKILL)");
    }
    const int status = ssh_channel_get_exit_status(channel.channel);
    if (!ssh_is_connected(s)) return lost("waiting for its exit status");
    result.exit_code = exit_state.signal.empty() ? status : -1;
    result.signal = exit_state.signal;
    if (out_cut) result.out += "\n[output cut: more than " + std::to_string(options.max_output) + " bytes]";
    if (err_cut) result.err += "\n[output cut: more than " + std::to_string(options.max_output) + " bytes]";
    return result;
  };
  StatusOr<CommandResult> outcome = attempt();
  if (io_failed || connection_.watchdog().fired()) {
    connection_.checkAlive();
    if (!connection_.connected() && !outcome.isOk()) {
      return Status::ioError(outcome.status().message() + " (connection lost; the next call reconnects)");
    }
  }
  return outcome;
}

}  // namespace fs::app::remote
