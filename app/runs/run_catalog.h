// The run catalog: which run directories a run root holds, from their run.json.
//
// A run directory is a direct sub-directory of the run root that has a
// run.json (docs/run-directory.md); anything else is skipped. Each manifest is
// read with the protocol library; one that cannot be read (torn, mistyped, a
// newer major schema version) still gives a summary, with `error` saying why,
// so a broken run is listed instead of silently vanishing.
//
// scanRunRoot() touches the disk: call it on a worker thread, e.g. through
// RunCatalogWorker, never on the GUI thread.
//
// Thread-safety: scanRunRoot is reentrant; RunCatalogWorker lives on one
// worker thread, except cancel() which any thread may call.
#pragma once

#include <QDateTime>
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <atomic>

#include "backend/protocol/wire/run_manifest.h"

namespace fs::app {

// One run directory as its manifest describes it.
struct RunSummary {
  QString name;       // the directory's name
  QString dir;        // absolute path of the run directory (on `host`)
  QString host;       // empty: this machine; else the host it was listed on (app/cluster/remote_runs.h)
  QString runId;      // run.json run_id; empty when unreadable
  QString state;      // starting | running | paused | stopping | finished | failed; empty when unreadable
  QDateTime created;  // invalid when unreadable
  int worldSize = 0;
  QString launcher;  // local | ssh | slurm
  QString error;     // why run.json could not be read; empty when it was

  bool isOk() const { return error.isEmpty(); }
};

// The result of scanning one run root.
struct RunScan {
  QString root;              // as requested
  QList<RunSummary> runs;    // readable runs newest first (then by name), then unreadable ones by name
  QString error;             // the root itself could not be listed; runs is then empty
  bool rootMissing = false;  // the error is only that the root does not exist (yet)
  bool cancelled = false;    // stopped early: runs holds what was read until then
};

// The summary of a run directory from its manifest, however it was read (a local
// file here, SFTP in app/cluster/remote_runs.h); a failed read gives `error`.
RunSummary summarizeManifest(const QString& name, const QString& dir,
                             const protocol::StatusOr<protocol::RunManifest>& manifest);
// Readable runs newest first (then by name), then unreadable ones by name.
void sortRuns(QList<RunSummary>* runs);

// Lists `root` and reads every run.json in it. Never throws. A missing root
// is an error naming it. Polls `cancel` (may be null) between directories.
RunScan scanRunRoot(const QString& root, const std::atomic<bool>* cancel = nullptr);

// Scans on the thread it lives on (see WorkerThread): scan() in, scanned() out.
class RunCatalogWorker : public QObject {
  Q_OBJECT
 public:
  explicit RunCatalogWorker(QObject* parent = nullptr);

  // Stops the scan in progress, if any, at its next directory; it still
  // emits scanned() with cancelled = true. Scans requested later run normally.
  // Thread-safe.
  void cancel();

 public slots:
  void scan(const QString& root);

 signals:
  void scanned(const fs::app::RunScan& result);

 private:
  std::atomic<bool> cancel_{false};
};

}  // namespace fs::app

Q_DECLARE_METATYPE(fs::app::RunSummary)
Q_DECLARE_METATYPE(fs::app::RunScan)
