// HistoryWorker: the run history's database and file work, on its own thread.
//
// Lives on a WorkerThread (app/common/worker_thread.h) and owns the
// HistoryStore, so the SQLite connection is opened, used and closed on that
// thread only. Requests come in as queued slot calls, answers go out as
// signals; every write is followed by changed() so views re-query. Errors
// are signals with a message naming the database, file or run, never
// dialogs.
//
// Long work (reading a run directory's events) reports progress and stops at
// the next chunk after cancel(); a cancelled import stores nothing. A remote
// run directory is read through its RunDirSource (SFTP) on this thread too.
//
// Thread-safety: lives on one worker thread; cancel() may be called from any
// thread. Ownership: owns its store; closes it on its own thread when that
// thread finishes (or in the destructor when it never moved to one).
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <memory>

#include "app/history/config_diff.h"
#include "app/history/history_record.h"
#include "app/history/reference_curve.h"

namespace fs::app {

class HistoryStore;
class RunDirSource;

class HistoryWorker : public QObject {
  Q_OBJECT
 public:
  explicit HistoryWorker(QObject* parent = nullptr);
  ~HistoryWorker() override;

  // Stops the import in progress, if any, at its next chunk. Thread-safe.
  void cancel();

 public slots:
  // Opens (creating or migrating) the database at `path`; an empty path
  // means defaultHistoryPath(). Emits opened() or failed("open", ...).
  void open(const QString& path);

  // Reads a run directory and records it (replacing the run's row).
  // Emits importProgress() while reading, then imported() or importFailed().
  void importRunDir(const QString& runDir);
  // One after another, each as importRunDir; stops at the first cancel.
  void importRunDirs(const QStringList& runDirs);
  // Reads a run directory through `source` (a HostRunDir holding its Host,
  // for a remote one) and records it with RunRecord::location = `location`;
  // `runDir` is its path there. Signals as importRunDir, each naming
  // location:runDir. The source is used on this thread for the call only.
  void importRunDirFrom(const std::shared_ptr<fs::app::RunDirSource>& source, const QString& runDir,
                        const QString& location);

  // Live updates from a monitor; failed(...) when the run is not recorded.
  void recordStarted(const fs::app::LiveRunStarted& started);
  void recordProgress(const fs::app::LiveStepProgress& progress);
  void recordCheckpoint(const fs::app::LiveCheckpoint& checkpoint);
  void recordFinished(const fs::app::LiveRunFinished& finished);

  // Emits queried() with the page (its error set when the query failed).
  void query(const fs::app::HistoryQuery& query);
  // Emits configDiff() for the configs of these runs.
  void diffConfigs(const QStringList& runIds, quint64 requestId);
  // Emits referenceCurves() with the curves or the error.
  void importReferenceCurves(const QString& path, const fs::app::ReferenceCurveOptions& options);

 signals:
  void opened(const QString& path);
  // `operation`: open, record, import, query; `message` names what failed.
  void failed(const QString& operation, const QString& message);
  void importProgress(const QString& runDir, qint64 bytesDone, qint64 bytesTotal);
  // `runDir` (in importProgress / importFailed): location:runDir for a remote run.
  // `warning`: lines of events.jsonl that did not decode, when there were.
  void imported(const fs::app::RunRecord& record, const QString& warning);
  void importFailed(const QString& runDir, const QString& message, bool cancelled);
  void queried(const fs::app::HistoryPage& page);
  void configDiff(const fs::app::RunConfigDiff& diff);
  void referenceCurves(const fs::app::ReferenceCurveImport& result);
  // Something was written: listings may be stale.
  void changed();

 private:
  enum class ImportResult { kWritten, kFailed, kCancelled };
  // `where`: runDir, or location:runDir, for signals and messages.
  ImportResult importOne(RunDirSource& source, const QString& runDir, const QString& location,
                         const QString& where);
  bool ensureStore(const QString& operation);
  void reportWrite(const QString& operation, const std::string& error);

  std::unique_ptr<HistoryStore> store_;
  std::atomic<bool> cancel_{false};
};

}  // namespace fs::app

Q_DECLARE_METATYPE(std::shared_ptr<fs::app::RunDirSource>)
