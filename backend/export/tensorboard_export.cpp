#include "backend/export/tensorboard_export.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>

#include "backend/export/output_file.h"
#include "backend/export/run_events.h"
#include "backend/export/series.h"
#include "backend/export/tfrecord.h"
#include "backend/protocol/wire/run_dir.h"
#include "tensorboard_event.pb.h"

namespace fs::exporter {

namespace stdfs = std::filesystem;
using protocol::Status;
namespace tb = fs::export_tb;

namespace {

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

std::vector<stdfs::path> existingEventFiles(const stdfs::path& dir) {
  std::vector<stdfs::path> found;
  std::error_code ec;
  for (const auto& entry : stdfs::directory_iterator(dir, ec))
    if (entry.path().filename().string().starts_with(kTfEventsPrefix)) found.push_back(entry.path());
  return found;
}

Status appendEvent(const tb::Event& event, OutputFile* file) {
  std::string bytes;
  if (!event.SerializeToString(&bytes))
    return Status::invalidArgument("cannot encode an event for " + file->target().string());
  return file->write(tfRecord(bytes));
}

// The file_version record and the config text, before the first scalar.
Status writePreamble(const stdfs::path& run_dir, double wall_time, OutputFile* file, ExportReport* report) {
  tb::Event version;
  version.set_wall_time(wall_time);
  version.set_file_version(std::string(kTfFileVersion));
  if (Status s = appendEvent(version, file); !s) return s;

  const stdfs::path config = protocol::RunDir(run_dir).configFile();
  std::ifstream in(config, std::ios::binary);
  if (!in) {
    report->warnings.push_back("no readable " + config.string() + ": the config is not exported");
    return Status::ok();
  }
  std::ostringstream text;
  text << in.rdbuf();
  tb::Event event;
  event.set_wall_time(wall_time);
  event.set_step(0);
  tb::Summary::Value* value = event.mutable_summary()->add_value();
  value->set_tag(std::string(kConfigTag));
  value->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  tb::TensorProto* tensor = value->mutable_tensor();
  tensor->set_dtype(tb::DT_STRING);
  tensor->mutable_tensor_shape();  // no dims: a scalar
  tensor->add_string_val(configAsMarkdown(text.str()));
  return appendEvent(event, file);
}

}  // namespace

std::string configAsMarkdown(std::string_view yaml) {
  std::string out;
  std::size_t start = 0;
  while (start < yaml.size()) {
    std::size_t end = yaml.find('\n', start);
    if (end == std::string_view::npos) end = yaml.size();
    out += "    ";
    out += yaml.substr(start, end - start);
    out += '\n';
    start = end + 1;
  }
  return out;
}

protocol::StatusOr<ExportReport> exportTensorBoard(const stdfs::path& run_dir, const stdfs::path& out_dir,
                                                   const ExportOptions& options) {
  if (Status s = checkRunDir(run_dir); !s) return s;
  std::error_code ec;
  bool created_dir = false;
  if (stdfs::exists(stdfs::symlink_status(out_dir, ec))) {
    if (!stdfs::is_directory(out_dir, ec))
      return Status::invalidArgument(out_dir.string() + " exists and is not a folder");
  } else {
    stdfs::create_directories(out_dir, ec);
    if (ec) return Status::ioError("cannot create the folder " + out_dir.string() + ": " + ec.message());
    created_dir = true;
  }
  // Removes a folder this export made, if the export leaves nothing in it.
  struct DirGuard {
    stdfs::path dir;
    bool active;
    ~DirGuard() {
      std::error_code e;
      if (active && stdfs::is_empty(dir, e)) stdfs::remove(dir, e);
    }
  } dir_guard{out_dir, created_dir};

  const std::vector<stdfs::path> old_files = existingEventFiles(out_dir);
  if (!old_files.empty() && !options.force)
    return Status::invalidArgument(out_dir.string() + " already holds TensorBoard event files (" +
                                   old_files.front().filename().string() +
                                   (old_files.size() > 1 ? ", ..." : "") + "); pass --force to replace them");

  const auto now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  auto file =
      OutputFile::create(out_dir / (std::string(kTfEventsPrefix) + std::to_string(now_s) + "." + hostName()));
  if (!file) return file.status();

  ExportReport report;
  report.output = (*file)->target();
  bool preamble_done = false;
  std::vector<SeriesPoint> points;
  auto rollbacks = readRollbacks(run_dir, options);
  if (!rollbacks) return rollbacks.status();
  Status read = readRunEvents(
      run_dir, options,
      [&](const protocol::Event& event) -> Status {
        if (!preamble_done) {
          preamble_done = true;
          if (Status s = writePreamble(run_dir, static_cast<double>(event.t) / 1000.0, file->get(), &report);
              !s)
            return s;
        }
        points.clear();
        appendSeries(event, &points, &rollbacks.value());
        if (points.empty()) return Status::ok();
        tb::Event out;
        out.set_wall_time(static_cast<double>(event.t) / 1000.0);
        out.set_step(points.front().step);
        tb::Summary* summary = out.mutable_summary();
        for (const SeriesPoint& p : points) {
          tb::Summary::Value* v = summary->add_value();
          v->set_tag(p.series);
          v->set_simple_value(static_cast<float>(p.value));
        }
        report.points += points.size();
        return appendEvent(out, file->get());
      },
      &report);
  if (!read) return read;
  if (!preamble_done) {
    if (Status s = writePreamble(run_dir, static_cast<double>(now_s), file->get(), &report); !s) return s;
  }
  if (cancelled(options)) return Status::cancelled("export cancelled");
  // With --force, a file of the same name (an export within the same second) is replaced.
  if (Status s = (*file)->commit(options.force); !s) return s;
  dir_guard.active = false;
  for (const auto& old : old_files) {
    if (old == report.output) continue;
    stdfs::remove(old, ec);
    if (ec)
      report.warnings.push_back("cannot remove the old event file " + old.string() + ": " + ec.message());
  }
  return report;
}

}  // namespace fs::exporter
