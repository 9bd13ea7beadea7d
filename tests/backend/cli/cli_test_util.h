// What the flamingo-train CLI tests share: running a shell command line with
// its output captured, reading a file whole, and the option names a --help
// text lists. Header-only; each test binary includes it once.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace fs::cli::testing {

struct Result {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `cmd` with /bin/sh in `cwd`, stdin from /dev/null; stdout and stderr go
// through files in `scratch` (which must exist) and come back whole.
inline Result runShell(const std::string& cmd, const std::filesystem::path& cwd,
                       const std::filesystem::path& scratch) {
  const auto out = scratch / "stdout", err = scratch / "stderr";
  const std::string full =
      "cd '" + cwd.string() + "' && " + cmd + " </dev/null >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(full.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

// The option names ("config", "json") of the "  -c, --config FILE   ..." and
// "  --json   ..." lines of a --help text.
inline std::set<std::string> helpOptionNames(const std::string& text) {
  static const std::regex kLine(R"(^  (?:-[A-Za-z0-9], )?--([a-z0-9][a-z0-9-]*)(?: |$))");
  std::set<std::string> names;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kLine)) names.insert(m[1]);
  }
  return names;
}

}  // namespace fs::cli::testing
