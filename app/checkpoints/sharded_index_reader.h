// What the GUI reads of a sharded checkpoint (checkpoint.format: sharded;
// NOTE [Sharded checkpoints] in backend/checkpoint/checkpoint_sharded.h): its
// index.json, which names every parameter with its unit, shape, dtype and
// whether it trains, the rank files and the resume point, so the tensors can
// be listed without opening a rank file.
//
// index.json is decoded by the protocol's codec (backend/protocol/
// sharded_index.h), the one the engine writes with; this keeps what a
// listing needs, as Qt values, and refuses what it could not list (a dtype
// that is not a parameter's, a shape that disagrees with numel, a name in
// parameter_order no unit holds). Errors start with the file and name the
// field ("c/index.json: units[0].flats[0].members: missing");
// tests/app/checkpoints/ reads an index the real engine wrote.
//
// Thread-safety: free functions, reentrant; they read the disk, so call them
// off the GUI thread.
#pragma once

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>

namespace fs::app {

// One model parameter as the index describes it.
struct ShardedTensorInfo {
  QString name;  // e.g. "perceiver.latents"
  QString unit;  // the FSDP unit holding it, as the index names it ("(root)": the root unit, "" in the layout
                 // event)
  QString dtype;  // c10's spelling: Float, Half, BFloat16, Double
  QList<qint64> shape;
  qint64 numel = 0;
  qint64 bytes = 0;  // numel x the dtype's size
  bool trainable = false;
  bool optimizerState = false;  // the rank files hold its AdamW moments
};

struct ShardedCheckpointInfo {
  qint64 worldSize = 0;  // of the run that wrote it
  QString strategy;      // full_shard | shard_grad_op | hybrid_shard | no_shard
  qint64 shardGroupSize = 0;
  QStringList files;                    // files[s]: shard s ("rank-<s>.pt")
  QList<ShardedTensorInfo> parameters;  // in the model's order (parameter_order)
  QStringList buffers;                  // kept in files[0]
  qint64 epoch = 0;
  QString resumeKind;  // epoch | step
  qint64 step = 0;
  qint64 iteration = 0;
};

struct ShardedIndexRead {
  ShardedCheckpointInfo info;
  QString error;  // names the file and the field; empty when read
  bool ok() const { return error.isEmpty(); }
};

// Parses index.json text; `where` (the file's path) starts every error.
ShardedIndexRead parseShardedIndex(const QByteArray& json, const QString& where);
// Reads `dir`/index.json.
ShardedIndexRead readShardedIndex(const QString& dir);

}  // namespace fs::app
