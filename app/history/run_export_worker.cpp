#include "app/history/run_export_worker.h"

#include <QFile>
#include <filesystem>
#include <system_error>
#include <vector>

#include "backend/export/csv_export.h"
#include "backend/export/run_events.h"
#include "backend/export/tensorboard_export.h"

namespace fs::app {

namespace stdfs = std::filesystem;

namespace {

stdfs::path toPath(const QString& p) {
  return stdfs::path(QFile::encodeName(p).toStdString());
}
QString fromPath(const stdfs::path& p) {
  return QFile::decodeName(QByteArray::fromStdString(p.string()));
}
QString fromStd(const std::string& s) {
  return QString::fromStdString(s);
}

}  // namespace

RunExportWorker::RunExportWorker(QObject* parent) : QObject(parent) {
  qRegisterMetaType<RunExportRequest>();
  qRegisterMetaType<RunExportResult>();
}

void RunExportWorker::cancel(quint64 id) {
  quint64 seen = cancelUpTo_.load();
  while (seen < id && !cancelUpTo_.compare_exchange_weak(seen, id)) {
  }
}

void RunExportWorker::exportRuns(const RunExportRequest& request) {
  RunExportResult result;
  result.id = request.id;
  std::atomic<bool> stop{cancelUpTo_.load() >= request.id};
  std::vector<stdfs::path> runs;
  for (const QString& d : request.runDirs) runs.push_back(toPath(d));

  std::uint64_t total = 0;
  for (const auto& r : runs) total += exporter::eventsFileSize(r);
  std::uint64_t base = 0;
  exporter::ExportOptions options;
  options.force = request.force;
  options.cancel = &stop;
  options.progress = [&](std::uint64_t done, std::uint64_t) {
    emit progress(request.id, static_cast<qint64>(base + done),
                  static_cast<qint64>(std::max(total, base + done)));
    if (cancelUpTo_.load() >= request.id) stop = true;
  };

  protocol::Status failure;
  std::vector<stdfs::path> written;  // files this request wrote
  std::vector<stdfs::path> made;     // folders this request made
  if (request.format == RunExportFormat::kCsv) {
    auto report = exporter::exportCsv(runs, toPath(request.output), options);
    if (report) {
      written.push_back(report->output);
      for (const auto& w : report->warnings) result.warnings << fromStd(w);
    } else {
      failure = report.status();
    }
  } else {
    const stdfs::path root = toPath(request.output);
    for (const auto& run : runs) {
      const stdfs::path out = root / exporter::runName(run);
      std::error_code ec;
      if (!stdfs::exists(out, ec)) made.push_back(out);
      auto report = exporter::exportTensorBoard(run, out, options);
      if (!report) {
        failure = report.status();
        break;
      }
      written.push_back(report->output);
      for (const auto& w : report->warnings) result.warnings << fromStd(w);
      base += exporter::eventsFileSize(run);
    }
  }

  if (failure.isOk()) {
    result.ok = true;
    for (const auto& w : written) result.outputs << fromPath(w);
    result.message =
        tr("Exported %n run(s) to %1", nullptr, static_cast<int>(runs.size())).arg(request.output);
  } else {
    // NOTE [Cancelling an export]: nothing of a failed or cancelled request stays.
    std::error_code ec;
    for (const auto& w : written) stdfs::remove(w, ec);
    for (auto it = made.rbegin(); it != made.rend(); ++it)
      if (stdfs::is_empty(*it, ec)) stdfs::remove(*it, ec);
    result.cancelled = failure.code() == protocol::Status::Code::kCancelled;
    result.message = result.cancelled ? tr("Export cancelled; nothing was written")
                                      : tr("Export failed: %1").arg(fromStd(failure.message()));
  }
  emit finished(result);
}

}  // namespace fs::app
