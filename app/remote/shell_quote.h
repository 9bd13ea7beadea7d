// Quoting of argument vectors for a remote POSIX shell: the one function every
// command sent over SSH goes through (NOTE [Remote command lines]).
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
// login shell as `$SHELL -c STRING`. Every remote command the app runs is an
// argument vector (Host::run takes argv, never a line) and is turned into that
// string by shellCommand() alone: each argument is wrapped in single quotes,
// inside which a POSIX shell expands nothing, and a single quote inside the
// argument becomes '\'' (close, escaped quote, reopen). So file names, run
// names, user-typed labels or paths containing $(..), backticks, ;, |,
// newlines, globs or a leading ~ reach the remote program byte for byte, and
// no other code builds a shell line from user text. Arguments made only of
// [A-Za-z0-9_@%+=:,./-] stay bare for readable logs (none of these is special
// to sh), except that a first word containing '=' is quoted so that it is not
// read as a variable assignment. A NUL byte cannot be passed in argv at all
// (execve ends the string there), so it is rejected rather than truncated.
// Other bytes, including ones that are not UTF-8, pass verbatim.
// The quoting is POSIX sh (dash, bash, zsh, ksh, busybox); a login shell of
// the csh family treats '!' and newlines differently and is not supported.

// `arg` quoted for a POSIX shell: 'it'\''s', '' for an empty argument, bare
// when it consists only of [A-Za-z0-9_@%+=:,./-].
// REQUIRES: no NUL byte in `arg` (shellCommand checks; this does not).
std::string shellQuote(std::string_view arg);

// The arguments quoted and joined with single spaces: the string for an SSH
// exec request. InvalidArgument naming the argument's index when one holds a
// NUL byte, or when argv is empty.
protocol::StatusOr<std::string> shellCommand(const std::vector<std::string>& argv);

}  // namespace fs::app::remote
