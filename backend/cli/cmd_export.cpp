// export: a run's telemetry in the formats teams share results in (docs/export.md):
//   flamingo-train export tensorboard RUN_DIR OUT_DIR    TensorBoard event file
//   flamingo-train export csv RUN_DIR... OUT.csv|-       one long-format CSV
// Torch-free (backend/export), so the tools-only build has it too.
//
// Progress: the exporters report bytes of events.jsonl read through
// exporter::ExportOptions::progress, drawn as a ProgressLine on a terminal.
#include <iostream>
#include <ostream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/cli/progress_line.h"
#include "backend/export/csv_export.h"
#include "backend/export/tensorboard_export.h"

namespace fs::cli {

// The tools' options: named constants (commands.h) so a command table can list them.
const std::vector<OptionSpec> kExportTensorBoardOptions = {
    {"force", false, false, "", "replace event files already in OUT_DIR"},
    {"help", false, false, "", "Show this help"},
};

const std::vector<OptionSpec> kExportCsvOptions = {
    {"force", false, false, "", "replace OUT.csv when it exists"},
    {"help", false, false, "", "Show this help"},
};

namespace {

namespace stdfs = std::filesystem;

const char* const kUsageTensorBoard = "usage: flamingo-train export tensorboard [--force] RUN_DIR OUT_DIR\n";
const char* const kUsageCsv = "usage: flamingo-train export csv [--force] RUN_DIR... OUT.csv|-\n";

const char* const kHelp =
    "\nExports a run's telemetry (RUN_DIR/events.jsonl; docs/export.md lists every series):\n"
    "  tensorboard   one event file in OUT_DIR (created when missing): every numeric series as a\n"
    "                scalar (loss/<dataset>, lr, grad_norm, throughput/..., gates/..., memory/rank<r>/...),\n"
    "                the config as text; view with `tensorboard --logdir OUT_DIR`\n"
    "  csv           one long-format CSV of every series of every RUN_DIR given:\n"
    "                run,series,step,samples,tokens,wall_time,value ('-': standard output)\n"
    "Lines of events.jsonl that cannot be read are left out, each named in a warning.\n"
    "Exit 0 when written (warnings included), 1 when the run or the output failed, 2 for bad options.\n\n";

// The exporters report (done, total) bytes of each run's events.jsonl per chunk read.
exporter::ProgressFn progressTo(ProgressLine& line) {
  return [&line](std::uint64_t done, std::uint64_t total) {
    line.setTotal(static_cast<int64_t>(total));
    line.update(static_cast<int64_t>(done));
  };
}

int usage(Io& io, const std::string& problem, const char* usageLine) {
  io.err << "flamingo-train export: " << problem << "\n" << usageLine;
  return kExitUsage;
}

void printWarnings(Io& io, const exporter::ExportReport& report) {
  for (const auto& w : report.warnings) io.err << "flamingo-train export: warning: " << w << "\n";
}

int finish(Io& io, const protocol::StatusOr<exporter::ExportReport>& result, bool to_stdout) {
  if (!result) {
    io.err << "flamingo-train export: " << result.status().message() << "\n";
    return kExitFailure;
  }
  printWarnings(io, *result);
  (to_stdout ? io.err : io.out) << "exported " << result->points << " values of " << result->events
                                << " events to " << result->output.string()
                                << (result->warnings.empty()
                                        ? std::string()
                                        : " (" + std::to_string(result->warnings.size()) +
                                              " warning(s) above)")
                                << "\n";
  return kExitOk;
}

}  // namespace

int runExportTensorBoard(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kExportTensorBoardOptions);
  if (!parsed) return usage(io, parsed.status().message(), kUsageTensorBoard);
  if (parsed->has("help")) {
    io.out << kUsageTensorBoard << kHelp << "options:\n" << formatOptions(kExportTensorBoardOptions);
    return kExitOk;
  }
  if (parsed->positionals.size() != 2)
    return usage(io, "tensorboard takes RUN_DIR and OUT_DIR", kUsageTensorBoard);
  exporter::ExportOptions options;
  options.force = parsed->has("force");
  ProgressLine line(io.err, io.errIsTerminal, "export", ProgressLine::Unit::kBytes);
  options.progress = progressTo(line);
  auto result = exporter::exportTensorBoard(parsed->positionals[0], parsed->positionals[1], options);
  line.finish();
  return finish(io, result, false);
}

int runExportCsv(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kExportCsvOptions);
  if (!parsed) return usage(io, parsed.status().message(), kUsageCsv);
  if (parsed->has("help")) {
    io.out << kUsageCsv << kHelp << "options:\n" << formatOptions(kExportCsvOptions);
    return kExitOk;
  }
  const auto& pos = parsed->positionals;
  if (pos.size() < 2)
    return usage(io, "csv takes one or more RUN_DIRs and OUT.csv (or - for standard output)", kUsageCsv);
  const std::vector<stdfs::path> runs(pos.begin(), pos.end() - 1);
  exporter::ExportOptions options;
  options.force = parsed->has("force");
  ProgressLine line(io.err, io.errIsTerminal, "export", ProgressLine::Unit::kBytes);
  options.progress = progressTo(line);
  const bool toStdout = pos.back() == "-";
  auto result = toStdout ? exporter::exportCsv(runs, io.out, options)
                         : exporter::exportCsv(runs, stdfs::path(pos.back()), options);
  line.finish();
  return finish(io, result, toStdout);
}

}  // namespace fs::cli
