// flamingo-train: the engine's command-line entry point.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "backend/cli/commands.h"

int main(int argc, char** argv) {
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
