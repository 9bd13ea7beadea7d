// What the replay tests share: running a command line (flamingo-train replay,
// a Python oracle) and reading the losses `flamingo-train replay` prints.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fs::trainer::test {

struct Command {
  int status = -1;     // the exit status, -1 when it did not exit normally
  std::string output;  // stdout and stderr
};

inline Command run(const std::string& cmd) {
  Command r;
  FILE* pipe = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

// (loss_laion, loss_mmc4) of every "iteration N  loss_laion X  loss_mmc4 Y" line.
inline std::vector<std::pair<double, double>> parseReplayLosses(const std::string& out) {
  std::vector<std::pair<double, double>> losses;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("iteration ", 0) != 0) continue;
    const auto laion = line.find("loss_laion "), mmc4 = line.find("loss_mmc4 ");
    if (laion == std::string::npos || mmc4 == std::string::npos) continue;
    losses.emplace_back(std::stod(line.substr(laion + 11)), std::stod(line.substr(mmc4 + 10)));
  }
  return losses;
}

}  // namespace fs::trainer::test
