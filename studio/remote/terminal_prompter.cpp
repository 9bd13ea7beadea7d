#include "studio/remote/terminal_prompter.h"

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace fs::studio::remote {
namespace {

// One line from /dev/tty (without its newline); nullopt without a terminal.
std::optional<std::string> askTty(const std::string& prompt, bool echo) {
  const int fd = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  (void)!::write(fd, prompt.data(), prompt.size());
  termios saved{};
  const bool restore = !echo && ::tcgetattr(fd, &saved) == 0;
  if (restore) {
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(fd, TCSAFLUSH, &quiet);
  }
  std::string line;
  char c = 0;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  if (restore) {
    ::tcsetattr(fd, TCSAFLUSH, &saved);
    (void)!::write(fd, "\n", 1);
  }
  ::close(fd);
  return line;
}

}  // namespace

app::remote::HostKeyAnswer TerminalPrompter::hostKey(const app::remote::HostKeyQuestion& q) {
  const std::string where = q.port == 22 ? q.host : "[" + q.host + "]:" + std::to_string(q.port);
  const std::string text = "The authenticity of host '" + where + "' (" + q.alias +
                           ") can't be established.\n" + q.key_type + " key fingerprint is " +
                           q.fingerprint_sha256 + ".\n";
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

std::optional<app::remote::Secret> TerminalPrompter::passphrase(const std::string& keyFile, int attempt) {
  if (batch_) {
    err_ << "Skipping encrypted key " << keyFile
         << ": --batch asks for no passphrase (load it into ssh-agent)\n";
    return std::nullopt;
  }
  auto answer = askTty(
      (attempt > 1 ? "Wrong passphrase. " : std::string()) + "Passphrase for " + keyFile + ": ", false);
  if (!answer) {
    err_ << "Skipping encrypted key " << keyFile << ": no terminal to ask for its passphrase\n";
    return std::nullopt;
  }
  app::remote::Secret secret(std::move(*answer));
  std::memset(answer->data(), 0, answer->size());
  return secret;
}

}  // namespace fs::studio::remote
