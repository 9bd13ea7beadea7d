// The flamingo-train subcommands. Each lives in its own cmd_*.cpp and is
// listed in commands.cpp. Exit codes: 0 success, 1 the input was read but
// is wrong (invalid config, failed run), 2 usage error (bad options).
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "backend/cli/args.h"

namespace fs::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct Io {
  std::ostream& out;
  std::ostream& err;
  std::istream& in;
};

struct Command {
  std::string name;
  std::string summary;  // one line for the command list
  std::function<int(const std::vector<std::string>& args, Io& io)> run;
};

const std::vector<Command>& commands();

// Dispatches argv[1] to a command; handles --help / --version / help <cmd>.
int runMain(const std::vector<std::string>& argv, Io& io);

// Per-command entry points (cmd_*.cpp).
int runValidate(const std::vector<std::string>& args, Io& io);
int runShowDefaults(const std::vector<std::string>& args, Io& io);
int runImportCmdline(const std::vector<std::string>& args, Io& io);
int runExportCmdline(const std::vector<std::string>& args, Io& io);
int runVersion(const std::vector<std::string>& args, Io& io);
int runLaunch(const std::vector<std::string>& args, Io& io);
int runPlan(const std::vector<std::string>& args, Io& io);
int runProbe(const std::vector<std::string>& args, Io& io);
int runCheckpoint(const std::vector<std::string>& args, Io& io);
int runCheckpointInspect(const std::vector<std::string>& args, Io& io);
int runCheckpointDiff(const std::vector<std::string>& args, Io& io);
int runCheckpointState(const std::vector<std::string>& args, Io& io);
int runCheckpointCheck(const std::vector<std::string>& args, Io& io);
int runStream(const std::vector<std::string>& args, Io& io);
// export: dispatches to its tools `tensorboard` and `csv` (cmd_export.cpp).
int runExport(const std::vector<std::string>& args, Io& io);
int runExportTensorBoard(const std::vector<std::string>& args, Io& io);
int runExportCsv(const std::vector<std::string>& args, Io& io);
extern const std::vector<OptionSpec> kExportTensorBoardOptions;
extern const std::vector<OptionSpec> kExportCsvOptions;
#ifdef FS_HAVE_ENGINE
int runTrain(const std::vector<std::string>& args, Io& io);
int runDemo(const std::vector<std::string>& args, Io& io);
int runReplay(const std::vector<std::string>& args, Io& io);
int runShards(const std::vector<std::string>& args, Io& io);
int runCheckpointConsolidate(const std::vector<std::string>& args, Io& io);
#endif

}  // namespace fs::cli
