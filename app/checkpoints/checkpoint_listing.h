// The checkpoints a run directory holds on disk, as the GUI lists them and
// offers them for resume.
//
// A checkpoint is either a file "checkpoint_<epoch>.pt" / "checkpoint_step<n>.pt"
// / "checkpoint_final.pt" (protocol::parseCheckpointFileName), or, with
// checkpoint.format: sharded, a directory of that same name holding
// rank-<s>.pt files and index.json (NOTE [Sharded checkpoints] in
// backend/checkpoint/checkpoint_sharded.h). A sharded directory counts the bytes
// of every file in it, and it is complete only when its index.json reads and
// every rank file the index names exists: the engine renames the directory
// into place only after all that is written, so anything less is a damaged
// copy, and the engine's own start-up scan skips it too. Names starting with
// '.' (a write in progress, ".checkpoint_step5.pt.partial") and temporaries
// are not checkpoints and are never listed.
//
// Thread-safety: free functions, reentrant; they touch the disk, so call them
// off the GUI thread.
#pragma once

#include <QList>
#include <QString>

namespace fs::app {

struct CheckpointOnDisk {
  QString name;  // "checkpoint_step5.pt": a file, or a sharded checkpoint's directory
  QString path;  // absolute
  bool sharded = false;
  qint64 bytes = 0;       // the file's size, or the sum of the directory's files
  QString kind;           // epoch | step | final, from the name
  int epoch = 0;          // kind epoch
  qint64 step = 0;        // kind step
  qint64 modifiedMs = 0;  // unix ms of the last write (a directory: its newest file)
  QString problem;        // why it cannot be resumed from; empty when complete
  bool isComplete() const { return problem.isEmpty(); }
};

struct CheckpointListing {
  QString runDir;
  QList<CheckpointOnDisk> checkpoints;  // complete or not, newest (modifiedMs) first, then by name
  QString error;                        // the run directory could not be listed; checkpoints is then empty
};

// Lists `runDir`'s checkpoints. Never throws.
CheckpointListing listCheckpoints(const QString& runDir);

// What a resume may start from: the complete checkpoints, newest first.
QList<CheckpointOnDisk> resumableCheckpoints(const CheckpointListing& listing);

}  // namespace fs::app
