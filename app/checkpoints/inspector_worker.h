// InspectorWorker: the checkpoint inspector's file work, off the GUI thread.
//
// Lives on a WorkerThread. It holds one opened checkpoint (open(), or
// openRemote() for one on another host, fetched through its index only:
// remote_checkpoint.h); stats(), verifyHashes(), diff() and trainingState()
// work on either alike; a remote one reports its bytes fetched (fetched()).
// Each request carries a ticket from newTicket(); its answer (opened /
// statsReady / hashesReady / diffReady / trainingStateReady / runListed, or
// failed) carries the same ticket, and progress(ticket, ...) comes between.
// Failure messages name the file (and the tensor at fault).
//
// Statistics are cached per (file, target): asking again for one tensor or
// subtree of the same file (also after reopening it, unless it was rewritten)
// answers at once with StatsResult::fromCache.
//
// Cancellation: cancel() stops every request ticketed so far, the one running
// (at its next chunk or tensor) and those still queued; each ends in
// failed(..., cancelled = true). open() and listRun() read only an index or a
// directory and are never cancelled; openRemote() is (its fetches).
//
// Thread-safety: slots run on the worker's thread; newTicket(), cancel() and
// setChunkBytes() may be called from any thread.
#pragma once

#include <QHash>
#include <QObject>
#include <QString>
#include <atomic>
#include <functional>
#include <memory>

#include "app/checkpoints/inspector_results.h"
#include "app/remote/remote_host.h"

namespace fs::app {

class RemoteCheckpoint;

class InspectorWorker : public QObject {
  Q_OBJECT
 public:
  explicit InspectorWorker(QObject* parent = nullptr);
  ~InspectorWorker() override;

  // Any thread: the ticket of the next request (1, 2, ...).
  quint64 newTicket() { return ++lastTicket_; }
  // Any thread: cancels every request ticketed so far, running or queued.
  void cancel();
  // Any thread: progress / cancel granularity of statistics in bytes (default 16 MiB).
  void setChunkBytes(quint64 bytes) { chunkBytes_ = bytes; }
  // Worker thread (or before the first openRemote): where remote checkpoints' sparse
  // copies go (default: <user cache dir>/remote-checkpoints, app/common/user_dirs.h).
  void setCacheDir(const QString& dir) { cacheDir_ = dir; }

 public slots:
  // Opens a checkpoint file or directory (CheckpointIndex::open): opened or
  // failed. A run directory: runListed first, then its newest checkpoint
  // (complete ones before incomplete) opens.
  void open(quint64 ticket, const QString& path);
  // Opens `path` on `host` (null: the host of the last openRemote) through its
  // index only; tensors are fetched when read. A checkpoint file or directory,
  // or a run directory (runListed, then its newest checkpoint, as open()).
  // opened (path "host:/path") or failed.
  void openRemote(quint64 ticket, const std::shared_ptr<fs::app::remote::Host>& host, const QString& path);
  // Lists a run directory's checkpoints (listCheckpoints): runListed, or failed when it cannot be listed.
  void listRun(quint64 ticket, const QString& runDir);
  // Statistics and a linear histogram of a tensor, a list of tensors or a subtree of the open checkpoint.
  void stats(quint64 ticket, const fs::app::StatsTarget& target);
  // Every tensor with a manifest hash, checked against its bytes.
  void verifyHashes(quint64 ticket);
  // The open checkpoint (A) against `otherPath` (B), model section.
  void diff(quint64 ticket, const QString& otherPath);
  // The open checkpoint's training state (readTrainingState: reads the optimizer's moments).
  void trainingState(quint64 ticket);

 signals:
  void opened(quint64 ticket, const fs::app::CheckpointModelPtr& model);
  void runListed(quint64 ticket, const fs::app::CheckpointListing& listing);
  void progress(quint64 ticket, fs::app::InspectorTask task, quint64 done, quint64 total);
  void statsReady(quint64 ticket, const fs::app::StatsResult& result);
  void hashesReady(quint64 ticket, const fs::app::HashResult& result);
  void diffReady(quint64 ticket, const fs::app::DiffResult& result);
  void trainingStateReady(quint64 ticket, const fs::app::TrainingStateResult& result);
  // A remote checkpoint's bytes fetched so far and its files' bytes, after
  // opened and as a request fetches (`ticket` is that request's).
  void fetched(quint64 ticket, quint64 bytesFetched, quint64 bytesTotal);
  void failed(quint64 ticket, fs::app::InspectorTask task, const QString& message, bool cancelled);

 private:
  // Starts `ticket`: false (and failed(cancelled)) when it was cancelled before it began.
  bool begin(quint64 ticket, InspectorTask task);
  bool requireOpen(quint64 ticket, InspectorTask task);
  // A progress callback for `ticket` that emits at most ~200 signals per request.
  std::function<void(std::uint64_t, std::uint64_t)> progressFor(quint64 ticket, InspectorTask task);
  QString cacheKey(const StatsTarget& target) const;
  // Whether a request that failed with `status` was cancelled (the flag: a
  // reader may wrap a cancelled fetch in its own error).
  bool wasCancelled(const protocol::Status& status) const;
  void adopt(CheckpointModelPtr model, QString stamp);
  void onFetch();  // the mirror's progress

  std::atomic<quint64> lastTicket_{0};
  std::atomic<quint64> cancelUpTo_{0};
  std::atomic<bool> cancelFlag_{false};  // the running request's, as the backend polls it
  std::atomic<quint64> chunkBytes_{quint64{16} << 20};
  const inspect::CheckpointIndex* index_ = nullptr;  // localIndex_'s or remote_'s
  std::unique_ptr<inspect::CheckpointIndex> localIndex_;
  std::unique_ptr<RemoteCheckpoint> remote_;
  std::shared_ptr<remote::Host> host_;  // of the last openRemote
  QString cacheDir_;
  quint64 ticket_ = 0;  // the request running (for fetched())
  // NOTE [Training state progress]: while a training state is read, the bytes
  // each tensor read hands out (local: the index's gate; remote: the mirror's
  // fetches), for progress; the local gate also stops at a cancel.
  std::function<void(std::uint64_t bytes)> onRead_;
  std::uint64_t lastFetched_ = 0;
  CheckpointModelPtr model_;
  QString fileStamp_;                       // path + modification time of the open checkpoint
  QHash<QString, StatsResult> statsCache_;  // fileStamp_ + "|" + target key
};

// Registers the metatypes of the worker's signals (once; any thread).
void registerInspectorMetaTypes();

}  // namespace fs::app
