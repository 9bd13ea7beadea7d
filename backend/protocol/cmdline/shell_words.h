// POSIX sh words: split a pasted command line into argv, and quote argv back
// into a line any POSIX shell (dash, bash, zsh in sh mode) reads as the same
// words. This is the one place command lines are built for remote shells
// (ssh, SLURM scripts), so quoting is deliberately conservative.
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
// quoteShellWord leaves words made only of [A-Za-z0-9@%+=:,./_-] bare, writes
// '' for the empty word, and otherwise single-quotes the word, writing each
// ' as '\''. Any byte but NUL survives (newlines, non-ASCII, control bytes).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::protocol {

// Errors (InvalidArgument) name the problem and its position as
// "column C" (one-line input) or "line L, column C" (1-based, in bytes).
StatusOr<std::vector<std::string>> splitShellWords(const std::string& line);

// REQUIRES: `word` contains no NUL byte (no shell can pass one).
std::string quoteShellWord(const std::string& word);

// Each word quoted with quoteShellWord, separated by one space.
// splitShellWords(joinShellWords(w)) == w for every NUL-free w.
std::string joinShellWords(const std::vector<std::string>& words);

}  // namespace fs::protocol
