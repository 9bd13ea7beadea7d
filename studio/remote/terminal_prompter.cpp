#include "studio/remote/terminal_prompter.h"

#include <fcntl.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "studio/remote/terminal_text.h"

namespace fs::studio::remote {
namespace {

// NOTE [Echo and signals]: while echo is off, a signal that ends or stops the
// process (Ctrl-C, Ctrl-\\, Ctrl-Z, a hang-up, kill) first puts the terminal
// back, or the shell is left without echo. The handler restores the saved
// settings (tcsetattr is async-signal-safe), puts back the disposition the
// process had and raises the signal again: the process dies, stops, or runs
// its own handler, as it would have. After a stop it switches echo off again.
constexpr int kTtySignals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGTSTP};
constexpr int kTtySignalCount = sizeof kTtySignals / sizeof kTtySignals[0];
volatile sig_atomic_t g_tty_fd = -1;
termios g_saved{}, g_quiet{};
struct sigaction g_previous[kTtySignalCount];
bool g_installed[kTtySignalCount] = {};

int signalIndex(int sig) {
  for (int i = 0; i < kTtySignalCount; ++i) {
    if (kTtySignals[i] == sig) return i;
  }
  return -1;
}

void restoreTtyAndRaise(int sig) {
  const int saved_errno = errno;
  const int fd = g_tty_fd;
  const int i = signalIndex(sig);
  if (fd >= 0) ::tcsetattr(fd, TCSAFLUSH, &g_saved);
  struct sigaction ours {};
  if (i >= 0) ::sigaction(sig, &g_previous[i], &ours);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, sig);
  ::sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  ::raise(sig);  // dies, stops (and continues here) or runs the process's own handler
  if (i >= 0) ::sigaction(sig, &ours, nullptr);
  if (fd >= 0 && sig == SIGTSTP) ::tcsetattr(fd, TCSAFLUSH, &g_quiet);
  errno = saved_errno;
}

// One line from /dev/tty (without its newline); nullopt without a terminal,
// or when a signal the process handles itself interrupted the reading.
std::optional<std::string> askTty(const std::string& prompt, bool echo) {
  const int fd = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  const std::string shown = escapeTerminalText(prompt);  // it names hosts and keys
  (void)!::write(fd, shown.data(), shown.size());
  const bool restore = !echo && ::tcgetattr(fd, &g_saved) == 0;
  if (restore) {
    g_quiet = g_saved;
    g_quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    struct sigaction on_signal {};
    on_signal.sa_handler = restoreTtyAndRaise;
    sigemptyset(&on_signal.sa_mask);
    on_signal.sa_flags = 0;  // no SA_RESTART: a handled signal ends the read
    g_tty_fd = fd;
    for (int i = 0; i < kTtySignalCount; ++i) {
      // A signal the process ignores (nohup) stays ignored.
      g_installed[i] = ::sigaction(kTtySignals[i], nullptr, &g_previous[i]) == 0 &&
                       g_previous[i].sa_handler != SIG_IGN &&
                       ::sigaction(kTtySignals[i], &on_signal, nullptr) == 0;
    }
    ::tcsetattr(fd, TCSAFLUSH, &g_quiet);
  }
  std::string line;
  char c = 0;
  bool interrupted = false;
  while (true) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n == 1 && c != '\n') {
      line += c;
      continue;
    }
    interrupted = n < 0 && errno == EINTR;
    break;
  }
  if (restore) {
    ::tcsetattr(fd, TCSAFLUSH, &g_saved);
    for (int i = 0; i < kTtySignalCount; ++i) {
      if (g_installed[i]) ::sigaction(kTtySignals[i], &g_previous[i], nullptr);
      g_installed[i] = false;
    }
    g_tty_fd = -1;
    (void)!::write(fd, "\n", 1);
  }
  ::close(fd);
  if (interrupted) {
    std::fill(line.begin(), line.end(), '\0');
    return std::nullopt;
  }
  return line;
}

}  // namespace

app::remote::HostKeyAnswer TerminalPrompter::hostKey(const app::remote::HostKeyQuestion& q) {
  const std::string text = app::remote::hostKeyQuestionText(q);
  if (batch_) {
    err_ << text << "Refused: --batch never accepts an unknown host key; add it to " << q.save_file
         << " first (after checking the fingerprint).\n";
    return app::remote::HostKeyAnswer::kReject;
  }
  auto answer = askTty(text + "Accept it? [o]nce / [s]ave to " + q.save_file + " / [N]o: ", true);
  if (!answer) {
    err_ << text << "Refused: no terminal to ask on; run with a terminal or add the key to " << q.save_file
         << ".\n";
    return app::remote::HostKeyAnswer::kReject;
  }
  if (*answer == "s" || *answer == "save") return app::remote::HostKeyAnswer::kAcceptAndSave;
  if (*answer == "o" || *answer == "once") return app::remote::HostKeyAnswer::kAcceptOnce;
  return app::remote::HostKeyAnswer::kReject;
}

void TerminalPrompter::warning(const std::string& text) {
  err_ << "Warning: " << text << "\n";
}

std::optional<app::remote::Secret> TerminalPrompter::passphrase(const std::string& keyFile, int attempt) {
  if (batch_) {
    err_ << "Skipping encrypted key " << keyFile
         << ": --batch asks for no passphrase (load it into ssh-agent)\n";
    return std::nullopt;
  }
  auto answer = askTty(
      (attempt > 1 ? "Wrong passphrase. " : std::string()) + "Passphrase for " + keyFile + ": ", false);
  if (!answer) {
    err_ << "Skipping encrypted key " << keyFile
         << ": no terminal to ask for its passphrase, or the question was interrupted\n";
    return std::nullopt;
  }
  app::remote::Secret secret(std::move(*answer));
  std::memset(answer->data(), 0, answer->size());
  return secret;
}

}  // namespace fs::studio::remote
