// import-cmdline / export-cmdline: OpenFlamingo command lines <-> run configs.
#include <fstream>
#include <ostream>
#include <sstream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/cli/config_input.h"
#include "backend/protocol/cmdline/cmdline.h"
#include "backend/protocol/cmdline/shell_words.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::cli {

const std::vector<OptionSpec> kImportCmdlineOptions = {
    {"output", true, false, "FILE", "Write the config here instead of stdout", "o"},
    {"file", true, false, "FILE", "Read the command line from a file (e.g. a launch script)"},
    {"strict", false, false, "", "Exit 1 when the line has unknown flags or bad values"},
    {"help", false, false, "", "Show this help"},
};

int runImportCmdline(const std::vector<std::string>& args, Io& io) {
  const std::string usage =
      "usage: flamingo-train import-cmdline [options] -- torchrun ... train.py --flag value ...\n"
      "       flamingo-train import-cmdline [options] --file launch.sh\n"
      "       flamingo-train import-cmdline [options] < launch.sh\n";
  auto parsed = parseArgs(args, kImportCmdlineOptions);
  if (!parsed) {
    io.err << "flamingo-train import-cmdline: " << parsed.status().message() << "\n" << usage;
    return kExitUsage;
  }
  if (parsed->has("help")) {
    io.out << usage
           << "\nReads an OpenFlamingo training command line and prints the equivalent run config.\n"
              "Flags with no effect here (wandb, offline, ...) and unknown flags are listed on stderr.\n\n"
           << formatOptions(kImportCmdlineOptions);
    return kExitOk;
  }
  protocol::CmdlineImport imported;
  if (!parsed->positionals.empty()) {
    imported = protocol::importOpenFlamingoArgs(parsed->positionals);
  } else {
    std::stringstream ss;
    if (parsed->has("file")) {
      std::ifstream in(parsed->get("file"));
      if (!in) {
        io.err << parsed->get("file") << ": cannot open command-line file\n";
        return kExitFailure;
      }
      ss << in.rdbuf();
    } else {
      ss << io.in.rdbuf();
    }
    imported = protocol::importOpenFlamingoCmdline(ss.str());
  }
  printProblems("", imported.problems, io.err);
  for (const auto& f : imported.ignoredFlags)
    io.err << "note: " << f << " has no effect in Flamingo Studio; ignored\n";
  for (const auto& f : imported.unknownFlags)
    io.err << "warning: unknown flag " << f << " was not imported\n";
  const bool bad = protocol::hasErrors(imported.problems);
  if (bad) return kExitFailure;
  const std::string yaml = protocol::dumpConfigYaml(imported.config);
  if (parsed->has("output")) {
    protocol::Status st = protocol::saveConfigFile(imported.config, parsed->get("output"));
    if (!st) {
      io.err << st.message() << "\n";
      return kExitFailure;
    }
  } else {
    io.out << yaml;
  }
  return parsed->has("strict") && !imported.unknownFlags.empty() ? kExitFailure : kExitOk;
}

const std::vector<OptionSpec> kExportCmdlineOptions = {
    {"set", true, true, "KEY=VALUE", "Override a config field first"},
    {"strict", false, false, "", "Exit 1 when some settings have no train.py flag"},
    {"help", false, false, "", "Show this help"},
};

int runExportCmdline(const std::vector<std::string>& args, Io& io) {
  const std::string usage = "usage: flamingo-train export-cmdline <config.yaml | -> [options]\n";
  auto parsed = parseArgs(args, kExportCmdlineOptions);
  if (!parsed) {
    io.err << "flamingo-train export-cmdline: " << parsed.status().message() << "\n" << usage;
    return kExitUsage;
  }
  if (parsed->has("help")) {
    io.out << usage
           << "\nPrints the OpenFlamingo torchrun command line that trains this config. Settings that\n"
              "train.py cannot express are listed on stderr with what train.py would use instead.\n\n"
           << formatOptions(kExportCmdlineOptions);
    return kExitOk;
  }
  if (parsed->positionals.size() != 1) {
    io.err << "flamingo-train export-cmdline: expected one config file\n" << usage;
    return kExitUsage;
  }
  auto config = loadRunConfig(parsed->positionals[0], parsed->all("set"), io);
  if (!config) return kExitFailure;
  const auto exported = protocol::exportOpenFlamingoCmdline(*config);
  for (const auto& p : exported.notExpressible) {
    io.err << "warning: not expressible in train.py: " << (p.path.empty() ? "" : p.path + ": ") << p.message
           << "\n";
  }
  io.out << exported.line << "\n";
  return parsed->has("strict") && !exported.notExpressible.empty() ? kExitFailure : kExitOk;
}

}  // namespace fs::cli
