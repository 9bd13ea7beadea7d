#include "app/runs/run_catalog.h"

#include <QFile>
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "backend/protocol/wire/run_dir.h"
#include "backend/protocol/wire/run_manifest.h"

namespace fs::app {
namespace {

namespace stdfs = std::filesystem;

QString fromPath(const stdfs::path& p) {
  return QFile::decodeName(QByteArray::fromStdString(p.native()));
}

QString fromStd(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

// Summary of one directory, or nothing when it is not a run directory.
std::optional<RunSummary> summarize(const stdfs::path& dir) {
  std::error_code ec;
  if (!stdfs::exists(dir / protocol::kManifestFileName, ec)) return std::nullopt;
  return summarizeManifest(fromPath(dir.filename()), fromPath(dir), protocol::readManifest(dir));
}

}  // namespace

RunSummary summarizeManifest(const QString& name, const QString& dir,
                             const protocol::StatusOr<protocol::RunManifest>& manifest) {
  RunSummary s;
  s.name = name;
  s.dir = dir;
  if (!manifest.isOk()) {
    s.error = fromStd(manifest.status().message());
    return s;
  }
  const protocol::RunManifest& m = manifest.value();
  s.runId = fromStd(m.run_id);
  s.state = fromStd(protocol::toString(m.state));
  s.created = QDateTime::fromMSecsSinceEpoch(m.created);
  s.worldSize = m.world_size;
  s.launcher = fromStd(protocol::toString(m.launcher));
  return s;
}

void sortRuns(QList<RunSummary>* runs) {
  std::stable_sort(runs->begin(), runs->end(), [](const RunSummary& a, const RunSummary& b) {
    if (a.isOk() != b.isOk()) return a.isOk();
    if (a.isOk() && a.created != b.created) return a.created > b.created;
    return a.name < b.name;
  });
}

RunScan scanRunRoot(const QString& root, const std::atomic<bool>* cancel) {
  RunScan scan;
  scan.root = root;
  const stdfs::path rootPath(QFile::encodeName(root).toStdString());
  std::error_code ec;
  if (!stdfs::is_directory(rootPath, ec)) {
    const bool exists = stdfs::exists(rootPath, ec);
    scan.rootMissing = !exists && !ec;
    scan.error = QStringLiteral("run root %1 does not exist or is not a folder").arg(root);
    return scan;
  }
  stdfs::directory_iterator it(rootPath, stdfs::directory_options::skip_permission_denied, ec);
  if (ec) {
    scan.error = QStringLiteral("cannot list run root %1: %2").arg(root, fromStd(ec.message()));
    return scan;
  }
  for (const stdfs::directory_iterator end; it != end; it.increment(ec)) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      scan.cancelled = true;
      break;
    }
    const stdfs::path& p = it->path();
    if (p.filename().native().starts_with('.')) continue;  // temporaries and hidden folders
    std::error_code dirEc;
    if (!it->is_directory(dirEc)) continue;
    if (auto s = summarize(p)) scan.runs.push_back(std::move(*s));
  }
  if (ec && !scan.cancelled) {
    scan.error = QStringLiteral("listing run root %1 stopped: %2").arg(root, fromStd(ec.message()));
  }
  sortRuns(&scan.runs);
  return scan;
}

RunCatalogWorker::RunCatalogWorker(QObject* parent) : QObject(parent) {
  qRegisterMetaType<fs::app::RunScan>();
}

void RunCatalogWorker::cancel() {
  cancel_.store(true);
}

void RunCatalogWorker::scan(const QString& root) {
  cancel_.store(false);
  emit scanned(scanRunRoot(root, &cancel_));
}

}  // namespace fs::app
