// Quoting of argument vectors for a remote command: the one place every
// command sent over SSH is turned into a line (NOTE [Remote command lines]).
// POSIX words come from the one POSIX quoter, protocol::quoteShellWord
// (backend/protocol/cmdline/shell_words.h); the login shell dialects are here.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::app::remote {

// NOTE [Remote command lines]
// An SSH "exec" request carries one string, which sshd hands to the user's
// login shell (the passwd entry's) as `SHELL -c STRING`. Every remote command
// the app runs is an argument vector (Host::run takes argv, never a line) and
// is turned into that string by loginShellCommand() alone, in two layers:
//   inner: shellCommand(argv), a POSIX sh line (protocol::quoteShellWord,
//     backend/protocol/cmdline/shell_words.h). Each argument is wrapped in
//     single quotes, inside which a POSIX shell expands nothing, and a single
//     quote inside it becomes '\'' (close, escaped quote, reopen). So file
//     names, run names, labels or paths holding $(..), backticks, ;, |,
//     newlines, globs or a leading ~ reach the program byte for byte.
//     Arguments made only of [A-Za-z0-9_@%+=:,./-] stay bare for readable
//     logs (none is special to sh), except a first word holding '=' (it would
//     be an assignment) and a word starting with '=' (zsh's =cmd expansion).
//   outer: `exec /bin/sh -c 'exec INNER'`, quoted in the login shell's own
//     dialect, so that what the login shell parses is three fixed words and
//     one quoted string, whatever the shell is, and the inner line is always
//     read by /bin/sh, which replaces itself by the program (dash does not
//     exec a -c line's last command by itself), so that a signal the client
//     sends (timeout, cancel) reaches the program, as when bash ran it; so
//     argv[0] must be a program on PATH, not a builtin of the shell alone:
//       POSIX family (sh, bash, dash, zsh, ksh, ...): '...' with ' as '\''.
//       fish: '...' with \ as \\ and ' as \' (fish reads both escapes
//         inside single quotes; any other backslash stays).
//       csh, tcsh: '...' with ' as '\'', ! as \! (history substitution
//         happens even inside single quotes) and a newline as \ + newline
//         (a bare newline ends the command: "Unmatched '").
//     Any other shell is refused (LoginShell::kUnknown) naming it: we do not
//     send a line whose quoting we cannot vouch for.
// The login shell is found once per connection by kLoginShellProbe, a line
// every one of these shells reads without error: it prints the word
// 'a\\b\!' as the shell parsed it (POSIX: a\\b\!, fish: a\b\!, csh: a\\b!)
// and $SHELL, which sshd sets from the passwd entry it runs. The dialect is
// used only when both agree (parseLoginShellProbe); otherwise, or for a shell
// not named above, nothing is sent and the error names the shell. Trusting
// SHELL alone would not do: a csh reading a POSIX-quoted newline ends the
// quote there and runs the next line as a command.
// A NUL byte cannot be passed in argv at all (execve ends the string there),
// so it is rejected rather than truncated. Other bytes, including ones that
// are not UTF-8, pass verbatim (tests: shell_quote_test through sh, dash,
// bash, zsh, fish and tcsh; login_shell_test through sshd with each as root's
// login shell).

// The dialect a login shell quotes in.
enum class LoginShell { kPosix, kFish, kCsh, kUnknown };

// "POSIX sh", "fish", "csh" or "unknown".
const char* loginShellName(LoginShell shell);

// The family of a shell by its path's base name (bash, /usr/bin/zsh, tcsh,
// fish, ...; a version suffix as in bash5 or zsh-5.9 is ignored). kUnknown
// for anything else, including an empty path.
LoginShell loginShellOfPath(std::string_view path);

// The probe sent as an exec request once per connection, before any command,
// and what its output says. `shell` is the dialect to quote in: the family
// the parse showed when SHELL names a shell of that family, else kUnknown.
// InvalidArgument quoting the output when it holds no answer to the probe
// (a startup file's output before it is skipped).
extern const char* const kLoginShellProbe;
struct LoginShellProbe {
  LoginShell shell = LoginShell::kUnknown;
  LoginShell parsed = LoginShell::kUnknown;  // what the parse alone showed
  std::string path;                          // $SHELL as printed
};
protocol::StatusOr<LoginShellProbe> parseLoginShellProbe(std::string_view output);

// `text` as one word of `shell`'s dialect (always in single quotes).
// REQUIRES: shell is not kUnknown; no NUL byte in `text`.
std::string quoteForLoginShell(LoginShell shell, std::string_view text);

// The arguments quoted and joined with single spaces: the POSIX line.
// InvalidArgument naming the argument's index when one holds a NUL byte, or
// when argv is empty.
protocol::StatusOr<std::string> shellCommand(const std::vector<std::string>& argv);

// The string for an SSH exec request to a host whose login shell is `shell`:
// `exec /bin/sh -c <"exec " + shellCommand(argv), quoted for shell>`. shellCommand's
// errors, and InvalidArgument for kUnknown.
protocol::StatusOr<std::string> loginShellCommand(const std::vector<std::string>& argv, LoginShell shell);

}  // namespace fs::app::remote
