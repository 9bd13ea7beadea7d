// POSIX sh words: split a pasted command line into argv, and quote argv back
// into a line any POSIX shell (dash, bash, zsh in sh mode) reads as the same
// words. This is the one POSIX quoter: command lines for remote shells (ssh,
// SLURM scripts) and exported command lines are all built with it, so quoting
// is deliberately conservative. The login shell dialects (fish, csh) are
// app/remote/shell_quote.* (NOTE [Remote command lines]), built on this.
//
// NOTE [Shell words]: splitShellWords follows the sh tokenizer for what people
// paste, and performs no expansion:
//   - words are separated by runs of spaces, tabs and newlines (so a pasted
//     multi-line command is one command);
//   - 'single quotes' keep everything literally; "double quotes" keep
//     everything except \$ \` \" \\ and backslash-newline, which are escapes;
//   - outside quotes a backslash keeps the next character literally and
//     backslash-newline is a line continuation (also without a space before
//     it: `125000\` + newline + `  --next` gives "125000", "--next");
//   - `#` at the start of a word starts a comment up to the end of the line;
//   - $VAR, ${...}, $(...), `...`, globs, braces and ~ stay literal text:
//     $(...), ${...} and `...` are kept whole as part of the word, as sh
//     delimits them, but never run;
//   - the operators ; & | < > ( ) outside quotes are an error (only a single
//     simple command can be imported), naming line and column.
// Two deliberate deviations for pasted text: CR LF counts as LF outside
// quotes (Windows clipboards), and a lone backslash at the very end of the
// input is a continuation rather than a literal backslash.
//
// quoteShellWord leaves words made only of [A-Za-z0-9@%+=:,./_-] bare unless
// they start with '=' (zsh expands =cmd to the path of cmd), writes '' for the
// empty word, and otherwise single-quotes the word, writing each ' as '\''
// (singleQuoteShellWord, which always quotes). Any byte but NUL survives
// (newlines, non-ASCII, control bytes).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::protocol {

// Errors (InvalidArgument) name the problem and its position as
// "column C" (one-line input) or "line L, column C" (1-based, in bytes).
StatusOr<std::vector<std::string>> splitShellWords(const std::string& line);

// REQUIRES: `word` contains no NUL byte (no shell can pass one).
std::string quoteShellWord(std::string_view word);

// `word` in single quotes even when it could stay bare: 'it'\''s', ''.
// REQUIRES: `word` contains no NUL byte.
std::string singleQuoteShellWord(std::string_view word);

// Each word quoted with quoteShellWord, separated by one space.
// splitShellWords(joinShellWords(w)) == w for every NUL-free w.
std::string joinShellWords(const std::vector<std::string>& words);

}  // namespace fs::protocol
