// RunExportWorker: exports runs of the history (TensorBoard event files, or one
// CSV) on its own thread, for the History tab's "Export…" (ui/history/history_view.h).
//
// Requests come in as queued calls of exportRuns(); progress and the result go out
// as signals carrying the request's id. The export itself is backend/export's
// (the same code as `flamingo-train export`):
//   kTensorBoard  `output` is a folder; each run goes into output/<run name>/, so
//                 `tensorboard --logdir output` lists the runs by name;
//   kCsv          `output` is the CSV file; all runs in one file (the `run` column).
//
// NOTE [Cancelling an export]
// cancel(id) may be called from any thread, before or during the request. The
// export stops before its next chunk of events.jsonl and leaves nothing: the file
// being written is removed, and so is everything this request wrote for runs before
// it (a half set of runs is not what was asked for), and the folders it made.
//
// Thread-safety: exportRuns() runs on the worker's thread (WorkerThread); cancel()
// from any thread. Ownership: plain values in and out.
#pragma once

#include <QMetaType>
#include <QObject>
#include <QStringList>
#include <atomic>

namespace fs::app {

enum class RunExportFormat { kTensorBoard, kCsv };

struct RunExportRequest {
  quint64 id = 0;  // echoed in progress and the result
  RunExportFormat format = RunExportFormat::kCsv;
  QStringList runDirs;  // local run directories
  QString output;       // a folder (kTensorBoard) or a file (kCsv)
  bool force = false;   // replace existing event files / an existing CSV
};

struct RunExportResult {
  quint64 id = 0;
  bool ok = false;
  bool cancelled = false;
  QString message;       // what was done, or what went wrong (naming the path)
  QStringList warnings;  // lines left out of the export, each naming file and line
  QStringList outputs;   // the files written (none unless ok)
};

class RunExportWorker : public QObject {
  Q_OBJECT
 public:
  explicit RunExportWorker(QObject* parent = nullptr);

  // Stops request `id` (and any earlier one): NOTE [Cancelling an export].
  void cancel(quint64 id);

 public slots:
  void exportRuns(const fs::app::RunExportRequest& request);

 signals:
  // Bytes of the runs' events.jsonl read so far, of `total`.
  void progress(quint64 id, qint64 done, qint64 total);
  void finished(const fs::app::RunExportResult& result);

 private:
  std::atomic<quint64> cancelUpTo_{0};
};

}  // namespace fs::app

Q_DECLARE_METATYPE(fs::app::RunExportRequest)
Q_DECLARE_METATYPE(fs::app::RunExportResult)
