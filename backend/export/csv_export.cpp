#include "backend/export/csv_export.h"

#include <ostream>

#include "backend/export/csv_format.h"
#include "backend/export/output_file.h"
#include "backend/export/run_events.h"
#include "backend/export/series.h"

namespace fs::exporter {

namespace stdfs = std::filesystem;
using protocol::Status;

namespace {

void appendRow(const std::string& run, const SeriesPoint& p, std::string* out) {
  *out += run;
  *out += ',';
  *out += csvField(p.series);
  *out += ',';
  *out += std::to_string(p.step);
  *out += ',';
  if (p.samples) *out += std::to_string(*p.samples);
  *out += ',';
  if (p.tokens) *out += std::to_string(*p.tokens);
  *out += ',';
  *out += formatUnixMillis(p.t_ms);
  *out += ',';
  *out += formatDouble(p.value);
  *out += '\n';
}

// Every run's rows through `sink`, flushed once per event.
Status writeRows(const std::vector<stdfs::path>& run_dirs, const ExportOptions& options,
                 const std::function<Status(std::string_view)>& sink, ExportReport* report) {
  for (const auto& dir : run_dirs)
    if (Status s = checkRunDir(dir); !s) return s;
  std::uint64_t total = 0;
  for (const auto& dir : run_dirs) total += eventsFileSize(dir);
  if (Status s = sink(kCsvHeader); !s) return s;
  std::uint64_t base = 0;
  std::vector<SeriesPoint> points;
  std::string rows;
  for (const auto& dir : run_dirs) {
    const std::string run = csvField(runName(dir));
    auto rollbacks = readRollbacks(dir, options);
    if (!rollbacks) return rollbacks.status();
    Status s = readRunEvents(
        dir, options,
        [&](const protocol::Event& event) {
          points.clear();
          appendSeries(event, &points, &rollbacks.value());
          rows.clear();
          for (const SeriesPoint& p : points) appendRow(run, p, &rows);
          report->points += points.size();
          return sink(rows);
        },
        report, base, total);
    if (!s) return s;
    base += eventsFileSize(dir);
  }
  return Status::ok();
}

}  // namespace

protocol::StatusOr<ExportReport> exportCsv(const std::vector<stdfs::path>& run_dirs,
                                           const stdfs::path& out_csv, const ExportOptions& options) {
  for (const auto& dir : run_dirs)
    if (Status s = checkRunDir(dir); !s) return s;
  if (Status s = refuseExisting(out_csv, options.force); !s) return s;
  std::error_code ec;
  if (stdfs::is_directory(out_csv, ec))
    return Status::invalidArgument(out_csv.string() + " is a folder; name the CSV file to write");
  auto file = OutputFile::create(out_csv);
  if (!file) return file.status();
  ExportReport report;
  report.output = out_csv;
  if (Status s = writeRows(
          run_dirs, options, [&](std::string_view b) { return (*file)->write(b); }, &report);
      !s)
    return s;  // the temporary goes with `file`
  if (cancelled(options)) return Status::cancelled("export cancelled");
  if (Status s = (*file)->commit(options.force); !s) return s;
  return report;
}

protocol::StatusOr<ExportReport> exportCsv(const std::vector<stdfs::path>& run_dirs, std::ostream& out,
                                           const ExportOptions& options) {
  ExportReport report;
  report.output = "-";
  Status s = writeRows(
      run_dirs, options,
      [&](std::string_view b) {
        out.write(b.data(), static_cast<std::streamsize>(b.size()));
        return out ? Status::ok() : Status::ioError("cannot write the CSV to standard output");
      },
      &report);
  if (!s) return s;
  out.flush();
  if (!out) return Status::ioError("cannot write the CSV to standard output");
  return report;
}

}  // namespace fs::exporter
