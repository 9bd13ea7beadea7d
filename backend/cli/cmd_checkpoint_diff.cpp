// checkpoint diff: what changed between two checkpoints, tensor by tensor
// (backend/inspect/checkpoint_diff.h): changed tensors by relative change, with
// their largest change, cosine similarity and changed rows; then mis-shaped,
// added and removed ones. Human output, or --json. Torch-free.
#include <cmath>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/cli/progress_line.h"
#include "backend/inspect/checkpoint_diff.h"

namespace fs::cli {

namespace {

namespace in = fs::inspect;
namespace tf = fs::tensorfile;
using nlohmann::json;

constexpr const char* kWho = "flamingo-train checkpoint diff";

std::string shapeText(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// "3, 7" or "3, 7, ... (120 rows)".
std::string rowsText(const in::TensorDiff& d, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < d.changedRows.size() && i < max; ++i)
    out += (i ? ", " : "") + std::to_string(d.changedRows[i]);
  if (static_cast<std::size_t>(d.changedRowCount) > max)
    out += ", ... (" + std::to_string(d.changedRowCount) + " rows)";
  return out;
}

json diffJson(const in::TensorDiff& d) {
  json j = {{"name", d.name},
            {"section", std::string(in::sectionName(d.section))},
            {"kind", std::string(in::diffKindName(d.kind))}};
  j["shape_a"] = d.shapeA.empty() && d.kind == in::DiffKind::kAdded ? json(nullptr) : json(d.shapeA);
  j["shape_b"] = d.shapeB.empty() && d.kind == in::DiffKind::kRemoved ? json(nullptr) : json(d.shapeB);
  if (d.kind == in::DiffKind::kChanged || d.kind == in::DiffKind::kUnchanged) {
    j["max_abs_change"] = d.maxAbsChange;
    j["relative_change"] = std::isinf(d.relativeChange) ? json("inf") : json(d.relativeChange);
    j["cosine"] = d.cosine;
    j["changed_elements"] = d.changedElements;
    if (d.rows > 0) {
      j["rows"] = d.rows;
      j["changed_rows"] = d.changedRows;
      j["changed_row_count"] = d.changedRowCount;
    }
  }
  return j;
}

}  // namespace

const std::vector<OptionSpec> kCheckpointDiffOptions = {
    {"json", false, false, "", "Print one JSON object instead of text"},
    {"optimizer", false, false, "", "Compare the optimizer state too (default: the model only)"},
    {"unchanged", false, false, "", "List the unchanged tensors too"},
    {"help", false, false, "", "Show this help"}};

int runCheckpointDiff(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kCheckpointDiffOptions);
  const bool help = parsed && parsed->has("help");
  if (!parsed || help || parsed->positionals.size() != 2) {
    auto& os = help ? io.out : io.err;
    if (!parsed) os << kWho << ": " << parsed.status().message() << "\n";
    os << "usage: " << kWho
       << " <checkpoint-a> <checkpoint-b> [--optimizer] [--unchanged] [--json]\n\n"
          "What changed from A to B, tensor by tensor: the largest absolute change, the relative\n"
          "change ||b - a|| / ||a||, the cosine similarity and, for 2-D tensors (embeddings), the rows\n"
          "that moved; tensors only in one of them, or of another shape. Any format `inspect` opens.\n\n"
       << formatOptions(kCheckpointDiffOptions);
    return help ? kExitOk : kExitUsage;
  }
  auto a = in::CheckpointIndex::open(parsed->positionals[0]);
  if (!a) {
    io.err << kWho << ": " << a.status().message() << "\n";
    return kExitFailure;
  }
  auto b = in::CheckpointIndex::open(parsed->positionals[1]);
  if (!b) {
    io.err << kWho << ": " << b.status().message() << "\n";
    return kExitFailure;
  }
  in::DiffOptions options;
  if (parsed->has("optimizer")) options.sections.push_back(in::Section::kOptimizer);
  ProgressLine progress(io.err, io.errIsTerminal, "diff", ProgressLine::Unit::kBytes);
  options.progress = [&](std::uint64_t done, std::uint64_t total) {
    progress.setTotal(static_cast<int64_t>(total));
    progress.update(static_cast<int64_t>(done));
  };
  auto report = in::diffCheckpoints(a.value(), b.value(), options);
  progress.finish();
  if (!report) {
    io.err << kWho << ": " << report.status().message() << "\n";
    return kExitFailure;
  }
  const bool unchanged = parsed->has("unchanged");
  if (parsed->has("json")) {
    json list = json::array();
    for (const auto& d : report->tensors)
      if (unchanged || d.kind != in::DiffKind::kUnchanged) list.push_back(diffJson(d));
    json j = {{"a", parsed->positionals[0]},     {"b", parsed->positionals[1]}, {"changed", report->changed},
              {"unchanged", report->unchanged},  {"added", report->added},      {"removed", report->removed},
              {"mis_shaped", report->misShaped}, {"tensors", std::move(list)}};
    io.out << j.dump(1) << "\n";
    return kExitOk;
  }
  io.out << report->changed << " changed, " << report->unchanged << " unchanged, " << report->added
         << " added, " << report->removed << " removed, " << report->misShaped << " mis-shaped\n";
  for (const auto& d : report->tensors) {
    if (d.kind == in::DiffKind::kUnchanged && !unchanged) continue;
    io.out << "  " << std::left << std::setw(10) << in::diffKindName(d.kind) << std::right << " " << d.name;
    switch (d.kind) {
      case in::DiffKind::kChanged:
      case in::DiffKind::kUnchanged: {
        std::ostringstream f;
        f << std::setprecision(4) << "  relative " << d.relativeChange << ", max |change| " << d.maxAbsChange
          << ", cosine " << std::setprecision(8) << d.cosine << ", " << d.changedElements << " elements";
        io.out << f.str();
        if (d.changedRowCount > 0) io.out << ", rows " << rowsText(d, 8);
        break;
      }
      case in::DiffKind::kMisShaped:
        io.out << "  " << shapeText(d.shapeA) << " -> " << shapeText(d.shapeB);
        break;
      case in::DiffKind::kAdded:
        io.out << "  " << shapeText(d.shapeB);
        break;
      case in::DiffKind::kRemoved:
        io.out << "  " << shapeText(d.shapeA);
        break;
    }
    io.out << "\n";
  }
  return kExitOk;
}

}  // namespace fs::cli
