#include "app/remote/shell_quote.h"

#include <array>

#include "backend/protocol/cmdline/shell_words.h"

namespace fs::app::remote {
namespace {

std::string fishQuoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  for (const char c : text) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  out += '\'';
  return out;
}

std::string cshQuoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else if (c == '!' || c == '\n') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

constexpr std::array<std::string_view, 17> kPosixShells = {
    "sh",   "bash",  "rbash", "dash",  "ash",  "zsh",  "ksh",  "ksh93",  "mksh",
    "lksh", "pdksh", "oksh",  "loksh", "yash", "posh", "bosh", "busybox"};

// Removes a version suffix: bash5, zsh-5.9, ksh93 stays (it is listed).
std::string_view withoutVersion(std::string_view name) {
  std::size_t end = name.size();
  while (end > 0 && ((name[end - 1] >= '0' && name[end - 1] <= '9') || name[end - 1] == '.' ||
                     name[end - 1] == '-' || name[end - 1] == '_')) {
    --end;
  }
  return name.substr(0, end);
}

LoginShell familyOfName(std::string_view name) {
  if (name == "fish") return LoginShell::kFish;
  if (name == "csh" || name == "tcsh") return LoginShell::kCsh;
  for (const std::string_view posix : kPosixShells) {
    if (name == posix) return LoginShell::kPosix;
  }
  return LoginShell::kUnknown;
}

constexpr std::string_view kProbeMarker = "fs-login-shell ";

}  // namespace

const char* const kLoginShellProbe = "printf 'fs-login-shell %s %s\\n' 'a\\\\b\\!' \"$SHELL\"";

const char* loginShellName(LoginShell shell) {
  switch (shell) {
    case LoginShell::kPosix:
      return "POSIX sh";
    case LoginShell::kFish:
      return "fish";
    case LoginShell::kCsh:
      return "csh";
    case LoginShell::kUnknown:
      break;
  }
  return "unknown";
}

LoginShell loginShellOfPath(std::string_view path) {
  const auto slash = path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (base.empty()) return LoginShell::kUnknown;
  const LoginShell exact = familyOfName(base);
  return exact != LoginShell::kUnknown ? exact : familyOfName(withoutVersion(base));
}

protocol::StatusOr<LoginShellProbe> parseLoginShellProbe(std::string_view output) {
  std::size_t at = 0;
  while (at < output.size()) {
    std::size_t end = output.find('\n', at);
    if (end == std::string_view::npos) end = output.size();
    const std::string_view line = output.substr(at, end - at);
    at = end + 1;
    if (line.substr(0, kProbeMarker.size()) != kProbeMarker) continue;
    const std::string_view rest = line.substr(kProbeMarker.size());
    const auto space = rest.find(' ');
    if (space == std::string_view::npos) continue;
    const std::string_view word = rest.substr(0, space);
    LoginShellProbe probe;
    probe.path = std::string(rest.substr(space + 1));
    if (word == "a\\\\b\\!") {
      probe.parsed = LoginShell::kPosix;
    } else if (word == "a\\b\\!") {
      probe.parsed = LoginShell::kFish;
    } else if (word == "a\\\\b!") {
      probe.parsed = LoginShell::kCsh;
    }
    if (probe.parsed != LoginShell::kUnknown && loginShellOfPath(probe.path) == probe.parsed) {
      probe.shell = probe.parsed;
    }
    return probe;
  }
  return protocol::Status::invalidArgument("the login shell probe got no answer; its output was '" +
                                           std::string(output.substr(0, 300)) + "'");
}

std::string quoteForLoginShell(LoginShell shell, std::string_view text) {
  switch (shell) {
    case LoginShell::kFish:
      return fishQuoted(text);
    case LoginShell::kCsh:
      return cshQuoted(text);
    case LoginShell::kPosix:
    case LoginShell::kUnknown:
      break;
  }
  return protocol::singleQuoteShellWord(text);
}

protocol::StatusOr<std::string> shellCommand(const std::vector<std::string>& argv) {
  if (argv.empty()) return protocol::Status::invalidArgument("remote command: empty argument vector");
  std::string line;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.find('\0') != std::string::npos) {
      return protocol::Status::invalidArgument("remote command: argument " + std::to_string(i) +
                                               " contains a NUL byte, which a command line cannot carry");
    }
    if (i > 0) line += ' ';
    // A bare first word "A=B" would be a variable assignment, not a command.
    if (i == 0 && arg.find('=') != std::string::npos) {
      line += protocol::singleQuoteShellWord(arg);
    } else {
      line += protocol::quoteShellWord(arg);
    }
  }
  return line;
}

protocol::StatusOr<std::string> loginShellCommand(const std::vector<std::string>& argv, LoginShell shell) {
  if (shell == LoginShell::kUnknown) {
    return protocol::Status::invalidArgument(
        "remote command: the login shell's quoting is unknown (POSIX sh, fish and csh are supported)");
  }
  auto inner = shellCommand(argv);
  if (!inner.isOk()) return inner.status();
  return "exec /bin/sh -c " + quoteForLoginShell(shell, "exec " + *inner);
}

}  // namespace fs::app::remote
