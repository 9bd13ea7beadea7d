#include "app/history/history_worker.h"

#include <QFile>
#include <QFileInfo>
#include <QThread>
#include <filesystem>
#include <vector>

#include "app/history/history_store.h"
#include "app/history/run_dir_reader.h"
#include "app/monitor/local_file_source.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::app {
namespace {

QString fromStd(const std::string& s) {
  return QString::fromStdString(s);
}

// Registered once, before any queued connection carries these types.
void registerTypes() {
  qRegisterMetaType<fs::app::RunRecord>();
  qRegisterMetaType<fs::app::HistoryQuery>();
  qRegisterMetaType<fs::app::HistoryPage>();
  qRegisterMetaType<fs::app::LiveRunStarted>();
  qRegisterMetaType<fs::app::LiveStepProgress>();
  qRegisterMetaType<fs::app::LiveCheckpoint>();
  qRegisterMetaType<fs::app::LiveRunFinished>();
  qRegisterMetaType<fs::app::RunConfigDiff>();
  qRegisterMetaType<fs::app::ReferenceCurveOptions>();
  qRegisterMetaType<fs::app::ReferenceCurveImport>();
  qRegisterMetaType<std::shared_ptr<fs::app::RunDirSource>>();
}

}  // namespace

HistoryWorker::HistoryWorker(QObject* parent) : QObject(parent) {
  registerTypes();
}

HistoryWorker::~HistoryWorker() = default;  // store_ closes itself when still open

void HistoryWorker::cancel() {
  cancel_.store(true);
}

bool HistoryWorker::ensureStore(const QString& operation) {
  if (store_ && store_->isOpen()) return true;
  emit failed(operation, tr("the history database is not open"));
  return false;
}

void HistoryWorker::reportWrite(const QString& operation, const std::string& error) {
  if (!error.empty()) {
    emit failed(operation, fromStd(error));
    return;
  }
  emit changed();
}

void HistoryWorker::open(const QString& path) {
  if (!store_) {
    store_ = std::make_unique<HistoryStore>();
    // QtSql connections belong to their thread: close ours on this thread,
    // just before it ends, not later in the destructor on the owner's thread.
    connect(
        QThread::currentThread(), &QThread::finished, this, [this] { store_.reset(); }, Qt::DirectConnection);
  }
  const QString target = path.isEmpty() ? defaultHistoryPath() : path;
  if (protocol::Status s = store_->open(target); !s) {
    emit failed(QStringLiteral("open"), fromStd(s.message()));
    return;
  }
  emit opened(target);
}

void HistoryWorker::importRunDir(const QString& runDir) {
  importRunDirs({runDir});
}

void HistoryWorker::importRunDirs(const QStringList& runDirs) {
  cancel_.store(false);
  if (!ensureStore(QStringLiteral("import"))) return;
  bool wrote = false;
  for (const QString& dir : runDirs) {
    const QString absDir = QFileInfo(dir).absoluteFilePath();
    LocalRunDir source(std::filesystem::path(QFile::encodeName(absDir).toStdString()));
    const ImportResult result = importOne(source, absDir, QString(), dir);
    if (result == ImportResult::kCancelled) break;
    wrote = wrote || result == ImportResult::kWritten;
  }
  if (wrote) emit changed();
}

void HistoryWorker::importRunDirFrom(const std::shared_ptr<RunDirSource>& source, const QString& runDir,
                                     const QString& location) {
  cancel_.store(false);
  if (!ensureStore(QStringLiteral("import"))) return;
  const QString where = location.isEmpty() ? runDir : location + QLatin1Char(':') + runDir;
  if (!source) {
    emit importFailed(where, tr("%1: no source to read the run directory through").arg(where), false);
    return;
  }
  if (importOne(*source, runDir, location, where) == ImportResult::kWritten) emit changed();
}

HistoryWorker::ImportResult HistoryWorker::importOne(RunDirSource& source, const QString& runDir,
                                                     const QString& location, const QString& where) {
  RunDirReadOptions options;
  options.cancel = &cancel_;
  options.progress = [this, &where](qint64 done, qint64 total) { emit importProgress(where, done, total); };
  auto read = readRunDirectory(source, runDir, options);
  if (!read.isOk()) {
    emit importFailed(where, fromStd(read.status().message()), false);
    return ImportResult::kFailed;
  }
  if (read->cancelled) {
    emit importFailed(where, tr("%1: import cancelled; nothing recorded").arg(where), true);
    return ImportResult::kCancelled;
  }
  read->record.location = location;
  if (protocol::Status s = store_->upsert(read->record, &read->record.runId); !s) {
    emit importFailed(where, fromStd(s.message()), false);
    return ImportResult::kFailed;
  }
  const QString warning =
      read->badLines == 0
          ? QString()
          : tr("%n line(s) of events.jsonl could not be read; the first: %1", nullptr, read->badLines)
                .arg(read->firstBadLine);
  emit imported(read->record, warning);
  return ImportResult::kWritten;
}

void HistoryWorker::recordStarted(const LiveRunStarted& started) {
  if (!ensureStore(QStringLiteral("record"))) return;
  reportWrite(QStringLiteral("record"), store_->recordStarted(started).message());
}

void HistoryWorker::recordProgress(const LiveStepProgress& progress) {
  if (!ensureStore(QStringLiteral("record"))) return;
  reportWrite(QStringLiteral("record"), store_->recordProgress(progress).message());
}

void HistoryWorker::recordCheckpoint(const LiveCheckpoint& checkpoint) {
  if (!ensureStore(QStringLiteral("record"))) return;
  reportWrite(QStringLiteral("record"), store_->recordCheckpoint(checkpoint).message());
}

void HistoryWorker::recordFinished(const LiveRunFinished& finished) {
  if (!ensureStore(QStringLiteral("record"))) return;
  reportWrite(QStringLiteral("record"), store_->recordFinished(finished).message());
}

void HistoryWorker::query(const HistoryQuery& query) {
  HistoryPage page;
  page.query = query;
  if (!store_ || !store_->isOpen()) {
    page.error = tr("the history database is not open");
  } else if (auto result = store_->query(query); !result.isOk()) {
    page.error = fromStd(result.status().message());
  } else {
    page = std::move(result).value();
  }
  emit queried(page);
}

void HistoryWorker::diffConfigs(const QStringList& runIds, quint64 requestId) {
  RunConfigDiff diff;
  diff.requestId = requestId;
  diff.runIds = runIds;
  if (!store_ || !store_->isOpen()) {
    diff.error = tr("the history database is not open");
    emit configDiff(diff);
    return;
  }
  std::vector<protocol::RunConfig> configs;
  for (const QString& id : runIds) {
    auto record = store_->find(id);
    if (!record.isOk()) {
      diff.error = fromStd(record.status().message());
      break;
    }
    diff.labels << (record->name.isEmpty() ? id : record->name);
    if (record->configYaml.isEmpty()) {
      diff.error = tr("run %1 (%2) has no config recorded").arg(record->name, id);
      break;
    }
    protocol::ConfigLoad load = protocol::loadConfigYaml(
        record->configYaml.toStdString(), QStringLiteral("config of run %1").arg(id).toStdString());
    if (!load.ok()) {
      diff.error = tr("run %1 (%2): its config does not load: %3")
                       .arg(record->name, id, fromStd(protocol::formatProblems(load.problems)));
      break;
    }
    configs.push_back(std::move(load.config));
  }
  if (diff.error.isEmpty()) diff.fields = fs::app::diffConfigs(configs);
  emit configDiff(diff);
}

void HistoryWorker::importReferenceCurves(const QString& path, const ReferenceCurveOptions& options) {
  ReferenceCurveImport result;
  result.path = path;
  auto loaded = loadReferenceCurves(path, options);
  if (loaded.isOk())
    result.curves = std::move(loaded).value();
  else
    result.error = fromStd(loaded.status().message());
  emit referenceCurves(result);
}

}  // namespace fs::app
