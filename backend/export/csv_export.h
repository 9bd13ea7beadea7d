// Runs as one long-format CSV: a header line, then one row per series point.
//
//   run,series,step,samples,tokens,wall_time,value
//   tiny-20260101-120000,loss/laion,1,4,64,1767268800.123,4.8515625
//
// run: the run directory's name; series: NOTE [Series names] in series.h; samples and
// tokens: cumulative counts of the step event the point comes from (empty for points
// of other events); wall_time: unix seconds with milliseconds; value: NOTE [CSV
// numbers] in csv_format.h. Fields are quoted per RFC 4180 when needed; lines end in
// "\n"; UTF-8 without a byte-order mark. Rows follow events.jsonl's order, runs the
// order given.
//
// Thread-safety: stateless; callbacks run on the calling thread.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <vector>

#include "backend/export/export_options.h"
#include "backend/protocol/status.h"

namespace fs::exporter {

inline constexpr std::string_view kCsvHeader = "run,series,step,samples,tokens,wall_time,value\n";

// Writes `out_csv` (refused when it exists unless options.force; nothing is left
// behind on failure or cancel: NOTE [No partial exports]).
protocol::StatusOr<ExportReport> exportCsv(const std::vector<std::filesystem::path>& run_dirs,
                                           const std::filesystem::path& out_csv,
                                           const ExportOptions& options = {});
// The same rows to a stream (standard output); report.output is "-".
protocol::StatusOr<ExportReport> exportCsv(const std::vector<std::filesystem::path>& run_dirs,
                                           std::ostream& out, const ExportOptions& options = {});

}  // namespace fs::exporter
