#include <ostream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::cli {

const std::vector<OptionSpec> kShowDefaultsOptions = {
    {"no-comments", false, false, "", "Leave out the help comments"},
    {"help", false, false, "", "Show this help"},
};

int runShowDefaults(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kShowDefaultsOptions);
  if (!parsed || !parsed->positionals.empty()) {
    io.err << "flamingo-train show-defaults: " << (parsed ? "takes no arguments" : parsed.status().message())
           << "\n";
    return kExitUsage;
  }
  if (parsed->has("help")) {
    io.out << "usage: flamingo-train show-defaults [--no-comments]\n\n"
              "Prints the default run config: OpenFlamingo train.py's defaults where it has the option.\n\n"
           << formatOptions(kShowDefaultsOptions);
    return kExitOk;
  }
  protocol::DumpOptions dump;
  dump.comments = !parsed->has("no-comments");
  io.out << protocol::dumpConfigYaml(protocol::defaultRunConfig(), dump);
  return kExitOk;
}

}  // namespace fs::cli
