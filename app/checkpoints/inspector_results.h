// The checkpoint inspector's results as plain values, for InspectorWorker's
// signals (queued across threads, hence Q_DECLARE_METATYPE).
//
// A CheckpointModel is the opened checkpoint's index as the views show it:
// tensors (copies of backend/inspect's TensorEntry) and one ModuleTree per
// section. It is shared read-only (std::shared_ptr<const>), so passing it
// around copies nothing. Thread-safety: immutable values.
#pragma once

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "app/checkpoints/checkpoint_listing.h"
#include "backend/inspect/checkpoint_diff.h"
#include "backend/inspect/checkpoint_index.h"
#include "backend/inspect/hash_check.h"
#include "backend/inspect/module_tree.h"
#include "backend/inspect/training_state.h"
#include "backend/tensorfile/tensor_stats.h"

namespace fs::app {

// What the views show of an opened checkpoint.
struct CheckpointModel {
  QString path;    // as opened (file or directory); "host:/path" for one on another host
  QString host;    // the host's name for one opened over SSH; "" here
  QString format;  // formatName(): "OpenFlamingo checkpoint", ...
  QStringList files;
  std::uint64_t fileBytes = 0;
  std::vector<inspect::TensorEntry> tensors;  // as CheckpointIndex::tensors()
  // One tree per section (model, optimizer, other) that has tensors, in that order.
  std::vector<std::pair<inspect::Section, inspect::ModuleTree>> trees;
  QStringList warnings;
  bool hasManifest = false;
};
using CheckpointModelPtr = std::shared_ptr<const CheckpointModel>;
// The views' copy of an opened index (its path and files as the index names them).
CheckpointModelPtr snapshotCheckpoint(const inspect::CheckpointIndex& index);

// What statistics are asked for: one tensor, a list of tensors, or a subtree
// (every tensor below a module path of one section, tied copies counted once).
struct StatsTarget {
  inspect::Section section = inspect::Section::kModel;
  QString nodePath;  // "" with `tensor` set, or the subtree's dotted path ("" = section root)
  std::optional<std::size_t> tensor;  // index into CheckpointModel::tensors
  std::vector<std::size_t> tensors;   // or several tensors merged as given (when not empty)
  int bins = 64;                      // linear bins over [min, max] of the finite values

  // The cache key within one file: "t:<index>:<bins>", "l:<i>,<j>,...:<bins>" or "s:<section>:<path>:<bins>".
  QString key() const;
  QString label(const CheckpointModel& model) const;  // "lang_encoder.layers (model, 12 tensors)"
};

struct StatsResult {
  StatsTarget target;
  QString label;
  std::vector<std::size_t> tensors;  // the tensors merged (tied copies left out)
  QStringList skipped;               // tensors left out: a dtype without statistics (complex, float8)
  tensorfile::TensorStats stats;
  bool fromCache = false;
};

struct HashResult {
  inspect::HashReport report;
};

struct DiffResult {
  QString pathA, pathB;
  inspect::DiffReport report;
};

// readTrainingState() of the open checkpoint; parts it lacks are empty
// optionals and lines in state.absent ("not in this checkpoint").
struct TrainingStateResult {
  QString path;
  inspect::TrainingState state;
  QString dataPosition;  // describeDataPosition() of state.resume->data; "" when none
};

// What a request was, for progress and failure messages.
enum class InspectorTask { kOpen, kStats, kHashes, kDiff, kListRun, kTrainingState };
QString inspectorTaskName(InspectorTask task);

}  // namespace fs::app

Q_DECLARE_METATYPE(fs::app::CheckpointModelPtr)
Q_DECLARE_METATYPE(fs::app::StatsTarget)
Q_DECLARE_METATYPE(fs::app::StatsResult)
Q_DECLARE_METATYPE(fs::app::HashResult)
Q_DECLARE_METATYPE(fs::app::DiffResult)
Q_DECLARE_METATYPE(fs::app::TrainingStateResult)
Q_DECLARE_METATYPE(fs::app::InspectorTask)
Q_DECLARE_METATYPE(fs::app::CheckpointListing)
