// InspectorWorker's checkpoints on another host: openRemote() (through
// remote_checkpoint.h's sparse copy) and the run directory listing it uses.
#include <QDir>
#include <QFile>
#include <algorithm>

#include "app/checkpoints/inspector_worker.h"
#include "app/checkpoints/remote_checkpoint.h"
#include "app/common/user_dirs.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::app {

namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

// listCheckpoints()'s rules over a Host: checkpoint names (no dot names), a
// sharded directory complete when its index.json is there (the engine renames
// it into place last); its bytes are not summed (one listing per directory
// would cost a round trip each).
CheckpointListing listRemoteCheckpoints(remote::Host& host, const QString& runDir) {
  CheckpointListing out;
  out.runDir = runDir;
  auto entries = host.list(runDir.toStdString());
  if (!entries.isOk()) {
    out.error = qs(entries.status().message());
    return out;
  }
  for (const remote::FileInfo& e : *entries) {
    const auto name = protocol::parseCheckpointFileName(e.name);
    if (!name || e.name.starts_with('.')) continue;
    CheckpointOnDisk c;
    c.name = qs(e.name);
    c.path = runDir + QLatin1Char('/') + c.name;
    c.sharded = e.is_dir;
    c.kind = QString::fromUtf8(protocol::toString(name->kind).data());
    c.epoch = name->epoch;
    c.step = name->step;
    c.bytes = static_cast<qint64>(e.size);
    c.modifiedMs = e.mtime * 1000;
    if (c.sharded && !host.stat(c.path.toStdString() + "/index.json").isOk())
      c.problem = QStringLiteral("%1: no index.json (incomplete)").arg(c.path);
    else if (!c.sharded && c.bytes == 0)
      c.problem = QStringLiteral("%1: empty file").arg(c.path);
    out.checkpoints << c;
  }
  std::stable_sort(
      out.checkpoints.begin(), out.checkpoints.end(),
      [](const CheckpointOnDisk& a, const CheckpointOnDisk& b) { return a.modifiedMs > b.modifiedMs; });
  return out;
}

}  // namespace

void InspectorWorker::openRemote(quint64 ticket, const std::shared_ptr<remote::Host>& given,
                                 const QString& path) {
  constexpr InspectorTask kTask = InspectorTask::kOpen;
  if (!begin(ticket, kTask)) return;
  const std::shared_ptr<remote::Host> host = given ? given : host_;
  host_ = host;
  if (!host) {
    emit failed(ticket, kTask, QStringLiteral("%1: no host to read it from").arg(path), false);
    return;
  }
  QString target = path;
  // A run directory (not a checkpoint directory): its newest checkpoint, as open() does here.
  if (auto info = host->stat(path.toStdString());
      info.isOk() && info->is_dir && !host->stat(path.toStdString() + "/index.json").isOk()) {
    const CheckpointListing listing = listRemoteCheckpoints(*host, path);
    if (listing.error.isEmpty() && !listing.checkpoints.isEmpty()) {
      emit runListed(ticket, listing);
      const QList<CheckpointOnDisk> complete = resumableCheckpoints(listing);
      target = (complete.isEmpty() ? listing.checkpoints : complete).front().path;
    }
  }
  QString cache = cacheDir_;
  if (cache.isEmpty()) {
    cache = QDir(userCacheDir()).filePath(QStringLiteral("remote-checkpoints"));
  }
  inspect::MirrorOptions options;
  options.cancel = &cancelFlag_;
  auto opening = progressFor(ticket, kTask);
  auto isOpen = std::make_shared<bool>(false);
  options.progress = [this, opening, isOpen](std::uint64_t done, std::uint64_t total) {
    if (*isOpen) {
      onFetch();  // a tensor's fetch: this mirror is remote_ now
    } else {
      opening(done, total);  // the index's parts, while opening
    }
  };
  auto mirrored = openRemoteCheckpoint(host, target.toStdString(), QFile::encodeName(cache).toStdString(),
                                       std::move(options));
  if (!mirrored) {
    emit failed(ticket, kTask, qs(mirrored.status().message()), wasCancelled(mirrored.status()));
    return;
  }
  std::unique_ptr<RemoteCheckpoint> ckpt = std::move(mirrored).value();
  auto model = std::const_pointer_cast<CheckpointModel>(snapshotCheckpoint(ckpt->index()));
  const QString where = qs(ckpt->where());
  const QString local = QFile::decodeName(ckpt->mirror().localPath().c_str());
  model->path = where;
  model->host = qs(host->name());
  for (QString& f : model->files) {
    if (f.startsWith(local)) f = where + f.mid(local.size());
  }
  // NOTE [Remote statistics cache]: a remote file's modification time is not
  // known here, so its statistics are cached for this open only.
  static std::atomic<quint64> opens{0};
  const QString stamp = QStringLiteral("%1|%2|open %3").arg(where).arg(model->fileBytes).arg(++opens);
  localIndex_.reset();
  remote_ = std::move(ckpt);
  index_ = &remote_->index();
  lastFetched_ = remote_->mirror().bytesFetched();
  *isOpen = true;
  adopt(std::move(model), stamp);
  emit opened(ticket, model_);
  emit fetched(ticket, lastFetched_, remote_->mirror().bytesTotal());
}

void InspectorWorker::onFetch() {
  const std::uint64_t now = remote_->mirror().bytesFetched();
  const std::uint64_t delta = now - std::min(now, lastFetched_);
  lastFetched_ = now;
  if (onRead_ && delta > 0) onRead_(delta);
  emit fetched(ticket_, now, remote_->mirror().bytesTotal());
}

}  // namespace fs::app
