// The interface the trainer pulls batches from: the synthetic source and the
// WebDataset shard pipeline (shard_source.h) implement it.
//
// Contract:
//   - A source is built for one rank of `world`; ranks get different data.
//   - next() returns the next StepBatches of the current epoch, or nullopt at
//     the end of the epoch (and keeps returning nullopt until setEpoch()).
//     Every epoch has stepsPerEpoch() steps: derived.h's batches per epoch,
//     the shortest dataset's when they differ (the reference zips loaders).
//   - setEpoch(e) starts epoch e from its first batch.
//   - position() after k calls of next() in epoch e, handed to restore() on a
//     fresh source of the same config, rank and world, makes that source
//     return exactly the batches the first would have returned next.
//   - waitReady(slice) waits up to `slice` until next() will not block:
//     true when it will not, false when the slice ran out. Sources that
//     read from outside fail it once nothing arrived for data.stall_timeout_s
//     (NOTE [Data stall] in shard_worker.h); in-memory sources are always
//     ready. The training loop waits in slices so that it can answer stop,
//     pause and checkpoint requests while the data is late.
//   - Errors (I/O, too many bad samples) come back as a Status; a source
//     never throws for expected failures.
//
// Thread-safety: a source is used by one thread (the rank's training loop);
// implementations may run workers of their own behind it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/data/batch.h"
#include "backend/data/data_position.h"
#include "backend/data/drop_ledger.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"

namespace fs::data {

struct DatasetInfo {
  std::string name;
  DatasetKind kind = DatasetKind::kLaion;
  int64_t batchSize = 0;        // per rank
  int64_t maxTokens = 0;        // resolved (laion 32, mmc4 256 by default)
  int64_t imagesPerSample = 0;  // T_img
  int64_t batchesPerEpoch = 0;  // derived.h's figure for this dataset
};

// The DatasetInfo of each configured dataset, in config order, with the
// figures (batches per epoch) of `world` ranks. REQUIRES: every type is
// laion or mmc4 (validateConfig).
std::vector<DatasetInfo> datasetInfos(const protocol::RunConfig& config, int64_t world);

class DataSource {
 public:
  virtual ~DataSource() = default;

  // nullopt = end of epoch.
  virtual protocol::StatusOr<std::optional<StepBatches>> next() = 0;
  virtual protocol::StatusOr<bool> waitReady(std::chrono::milliseconds /*slice*/) { return true; }
  virtual void setEpoch(int64_t epoch) = 0;
  virtual int64_t epoch() const = 0;
  virtual int64_t stepsPerEpoch() const = 0;
  virtual const std::vector<DatasetInfo>& datasets() const = 0;

  virtual DataPosition position() const = 0;
  // REQUIRES: a position from a source of the same kind, datasets, rank and
  // world; anything else is InvalidArgument and leaves the source unchanged.
  virtual protocol::Status restore(const DataPosition& position) = 0;

  // Samples accepted and dropped so far, per dataset name (data_stats
  // telemetry); sources that never drop return nothing.
  virtual std::map<std::string, DatasetDrops> dropCounts() const { return {}; }
  // Samples dropped or filtered so far, all datasets: cheap, for "did anything change".
  virtual int64_t notAccepted() const { return 0; }
  // Problem lines (bad shards, bad samples) since the last call, for the log.
  virtual std::vector<std::string> takeProblems() { return {}; }
};

}  // namespace fs::data
