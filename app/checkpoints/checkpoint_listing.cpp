#include "app/checkpoints/checkpoint_listing.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <algorithm>

#include "app/checkpoints/sharded_index_reader.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::app {
namespace {

// Sums the sizes of every file under `dir` (the engine writes none in
// sub-directories, but a copy might) and finds the newest write.
void measureDirectory(const QString& dir, CheckpointOnDisk* c) {
  QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    it.next();
    const QFileInfo f = it.fileInfo();
    c->bytes += f.size();
    c->modifiedMs = std::max(c->modifiedMs, f.lastModified().toMSecsSinceEpoch());
  }
}

// Empty when the directory is a complete sharded checkpoint; else why not,
// naming the file.
QString shardedProblem(const QString& dir) {
  const ShardedIndexRead index = readShardedIndex(dir);
  if (!index.ok()) return index.error;
  for (const QString& file : index.info.files) {
    const QFileInfo f(QDir(dir).filePath(file));
    if (!f.isFile()) return QStringLiteral("%1: missing (index.json names it)").arg(f.filePath());
  }
  return {};
}

}  // namespace

CheckpointListing listCheckpoints(const QString& runDir) {
  CheckpointListing out;
  out.runDir = runDir;
  const QDir dir(runDir);
  if (!dir.exists()) {
    out.error = QStringLiteral("%1: no such run directory").arg(runDir);
    return out;
  }
  // No QDir::Hidden: ".<name>.partial" (a write in progress) and other dot names stay out.
  const QFileInfoList entries =
      dir.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
  for (const QFileInfo& e : entries) {
    const auto name = protocol::parseCheckpointFileName(e.fileName().toStdString());
    if (!name || e.fileName().startsWith(QLatin1Char('.'))) continue;
    CheckpointOnDisk c;
    c.name = e.fileName();
    c.path = e.absoluteFilePath();
    c.sharded = e.isDir();
    c.kind = QString::fromUtf8(protocol::toString(name->kind).data());
    c.epoch = name->epoch;
    c.step = name->step;
    if (c.sharded) {
      measureDirectory(c.path, &c);
      c.problem = shardedProblem(c.path);
    } else {
      c.bytes = e.size();
      c.modifiedMs = e.lastModified().toMSecsSinceEpoch();
      if (c.bytes == 0) c.problem = QStringLiteral("%1: empty file").arg(c.path);
    }
    out.checkpoints << c;
  }
  std::stable_sort(
      out.checkpoints.begin(), out.checkpoints.end(),
      [](const CheckpointOnDisk& a, const CheckpointOnDisk& b) { return a.modifiedMs > b.modifiedMs; });
  return out;
}

QList<CheckpointOnDisk> resumableCheckpoints(const CheckpointListing& listing) {
  QList<CheckpointOnDisk> out;
  for (const CheckpointOnDisk& c : listing.checkpoints) {
    if (c.isComplete()) out << c;
  }
  return out;
}

}  // namespace fs::app
