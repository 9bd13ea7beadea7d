// flamingo-train: the engine's command-line entry point.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "backend/cli/commands.h"

int main(int argc, char** argv) {
  // OpenMP's default spin-waiting made 2-thread steps 10-100x slower on a
  // shared 2-core machine (docs/benchmarks.md); a user's setting still wins.
  // libgomp read the environment when it loaded, before main: this reaches the
  // processes started from here (the ranks of `launch`), not this one.
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
  std::vector<std::string> args(argv, argv + argc);
  fs::cli::Io io{std::cout, std::cerr, std::cin};
  io.errIsTerminal = ::isatty(STDERR_FILENO) == 1;  // progress lines only on a terminal
  try {
    return fs::cli::runMain(args, io);
  } catch (const std::exception& e) {
    // Library code reports expected failures as values; this is the last line of defence.
    std::cerr << "flamingo-train: internal error: " << e.what() << "\n";
    return fs::cli::kExitFailure;
  }
}
