// Hostile argument strings for the quoting tests (shell_quote_test through
// local shells, login_shell_test through sshd): shell syntax, quotes,
// backslashes, history and glob characters, control bytes, bytes that are not
// UTF-8, and payloads that would create `canary` if any shell expanded them.
// Header-only. Thread-safety: pure function.
#pragma once

#include <random>
#include <string>
#include <vector>

namespace fs::testing {

inline std::vector<std::string> hostileArguments(const std::string& canary) {
  const std::string touch = "touch " + canary;
  const std::vector<std::string> payloads = {"$(" + touch + ")",
                                             "`" + touch + "`",
                                             ";" + touch,
                                             "&&" + touch,
                                             "|" + touch,
                                             "\n" + touch,
                                             "'; " + touch + "; '",
                                             "\"; " + touch + "; \"",
                                             "'$(" + touch + ")'",
                                             "\\'; " + touch + " #",
                                             "$(" + touch + ")'\"`" + touch + "`",
                                             "${IFS}" + touch,
                                             "> " + canary,
                                             ">>" + canary,
                                             "<(" + touch + ")",
                                             "'\n" + touch + "\n'"};
  const std::vector<std::string> plain = {"",
                                          " ",
                                          "  two  spaces ",
                                          "'",
                                          "''",
                                          "\"",
                                          "\\",
                                          "\\\\",
                                          "it's",
                                          "a'b'c",
                                          "-n",
                                          "-e",
                                          "--",
                                          "-",
                                          "--help",
                                          "-rf /",
                                          "*",
                                          "?",
                                          "[a-z]*",
                                          "~",
                                          "~root",
                                          "~/x",
                                          "$HOME",
                                          "${HOME}",
                                          "$",
                                          "$$",
                                          "$?",
                                          "!",
                                          "!!",
                                          "#comment",
                                          "a#b",
                                          "\t",
                                          "\r\n",
                                          "\n",
                                          "tab\tand\nnewline",
                                          "{a,b}",
                                          "a=b",
                                          "%s%n%d",
                                          "\\0",
                                          "\\n",
                                          "é",
                                          "日本語",
                                          "\xff",
                                          "\xfe\xff",
                                          "\xc3\x28",
                                          "\x80\x81",
                                          "\x01\x02\x1b[31m",
                                          "space at end ",
                                          " space at start",
                                          "semi;colon",
                                          "pipe|x",
                                          "amp&x",
                                          "(paren)",
                                          "<in",
                                          ">out",
                                          "a\\'b",
                                          "'\\''",
                                          "plain",
                                          "/usr/bin/env",
                                          "x=1",
                                          "%@+=:,./-_",
                                          "ünïcödé",
                                          "\x7f"};
  std::vector<std::string> args = plain;
  for (const std::string& p : payloads) {
    args.push_back(p);
    args.push_back("x" + p + "y");
    args.push_back("'" + p + "'");
    args.push_back("\"" + p + "\"");
    args.push_back(p + "\\");
  }
  // Deterministic random bytes (no NUL), lengths 1..40.
  std::mt19937 rng(24);
  for (int i = 0; i < 80; ++i) {
    std::string s(1 + rng() % 40, 'x');
    for (char& c : s) c = static_cast<char>(1 + rng() % 255);
    args.push_back(s);
  }
  return args;
}

}  // namespace fs::testing
