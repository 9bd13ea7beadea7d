// The flamingo-train subcommands. Each lives in its own cmd_*.cpp and is
// listed in commands.cpp's table with its options and tools (subcommands):
// the table is what --help, parsing and `completion bash` all read (NOTE [One
// command table]). Exit codes: 0 success, 1 the input was read but is wrong
// (invalid config, failed run), 2 usage error (bad options).
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
  // Whether `err` is a terminal: progress lines are drawn only then (main.cpp
  // sets it from isatty(2); tests leave it false unless they test the line).
  bool errIsTerminal = false;
};

using RunFunction = std::function<int(const std::vector<std::string>& args, Io& io)>;

// A tool of a command (`checkpoint inspect`): dispatched by runMain.
struct Subcommand {
  std::string name;
  std::string summary;                     // one line for the command's tool list
  const std::vector<OptionSpec>* options;  // what `run` parses; never null
  RunFunction run;
};

// NOTE [One command table]
// Each command's options live in one named constant (kTrainOptions, ...) that
// its parser, its --help (formatOptions) and this table all use; commands with
// tools list them as subcommands, each with its constant. `flamingo-train
// completion bash` generates the completion script from this table, and
// command_table_test checks every entry's --help against it, so the three
// cannot drift. Adding a command is one entry here.
struct Command {
  std::string name;
  std::string summary;  // one line for the command list
  // Empty when the command has subcommands: runMain dispatches to them then.
  RunFunction run;
  const std::vector<OptionSpec>* options = nullptr;  // null when the command has subcommands
  std::vector<Subcommand> subcommands;
  // The words after "--" are a flamingo-train command line (launch ... -- train ...).
  bool commandAfterDoubleDash = false;
};

const std::vector<Command>& commands();

// Dispatches argv[1] to a command; handles --help / --version / help <cmd>.
int runMain(const std::vector<std::string>& argv, Io& io);

// Per-command entry points and their options (cmd_*.cpp).
extern const std::vector<OptionSpec> kValidateOptions;
extern const std::vector<OptionSpec> kShowDefaultsOptions;
extern const std::vector<OptionSpec> kImportCmdlineOptions;
extern const std::vector<OptionSpec> kExportCmdlineOptions;
extern const std::vector<OptionSpec> kVersionOptions;
extern const std::vector<OptionSpec> kLaunchOptions;
extern const std::vector<OptionSpec> kPlanOptions;
extern const std::vector<OptionSpec> kProbeOptions;
extern const std::vector<OptionSpec> kCheckpointInspectOptions;
extern const std::vector<OptionSpec> kCheckpointDiffOptions;
extern const std::vector<OptionSpec> kCheckpointStateOptions;
extern const std::vector<OptionSpec> kCheckpointCheckOptions;
extern const std::vector<OptionSpec> kStreamOptions;
extern const std::vector<OptionSpec> kCompletionOptions;
int runValidate(const std::vector<std::string>& args, Io& io);
int runShowDefaults(const std::vector<std::string>& args, Io& io);
int runImportCmdline(const std::vector<std::string>& args, Io& io);
int runExportCmdline(const std::vector<std::string>& args, Io& io);
int runVersion(const std::vector<std::string>& args, Io& io);
int runLaunch(const std::vector<std::string>& args, Io& io);
int runPlan(const std::vector<std::string>& args, Io& io);
int runProbe(const std::vector<std::string>& args, Io& io);
int runCheckpointInspect(const std::vector<std::string>& args, Io& io);
int runCheckpointDiff(const std::vector<std::string>& args, Io& io);
int runCheckpointState(const std::vector<std::string>& args, Io& io);
int runCheckpointCheck(const std::vector<std::string>& args, Io& io);
int runStream(const std::vector<std::string>& args, Io& io);
int runCompletion(const std::vector<std::string>& args, Io& io);
int runExportTensorBoard(const std::vector<std::string>& args, Io& io);
int runExportCsv(const std::vector<std::string>& args, Io& io);
extern const std::vector<OptionSpec> kExportTensorBoardOptions;
extern const std::vector<OptionSpec> kExportCsvOptions;
#ifdef FS_HAVE_ENGINE
extern const std::vector<OptionSpec> kTrainOptions;
extern const std::vector<OptionSpec> kDemoOptions;
extern const std::vector<OptionSpec> kReplayOptions;
extern const std::vector<OptionSpec> kCheckpointConsolidateOptions;
int runTrain(const std::vector<std::string>& args, Io& io);
int runDemo(const std::vector<std::string>& args, Io& io);
int runReplay(const std::vector<std::string>& args, Io& io);
int runCheckpointConsolidate(const std::vector<std::string>& args, Io& io);
#endif
#ifdef FS_HAVE_SHARD_TOOLS
extern const std::vector<OptionSpec> kShardsMakeSyntheticOptions;
extern const std::vector<OptionSpec> kShardsInspectOptions;
extern const std::vector<OptionSpec> kShardsValidateOptions;
extern const std::vector<OptionSpec> kShardsConvertMmc4Options;
int runShardsMakeSynthetic(const std::vector<std::string>& args, Io& io);
int runShardsInspect(const std::vector<std::string>& args, Io& io);
int runShardsValidate(const std::vector<std::string>& args, Io& io);
int runShardsConvertMmc4(const std::vector<std::string>& args, Io& io);
#elif defined(FS_HAVE_ENGINE)
int runShards(const std::vector<std::string>& args, Io& io);  // says why the tools are absent
#endif

}  // namespace fs::cli
