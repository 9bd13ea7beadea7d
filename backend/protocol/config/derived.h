// Figures a user otherwise computes by hand from a config: global batches,
// batches per epoch (as the reference's loader rounds them), steps, the
// scheduler length, checkpoint cadence and passes over each dataset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"

namespace fs::protocol {

struct DatasetFigures {
  std::string name;
  std::string type;
  int64_t maxTokens = 0;                // resolved type default
  int64_t globalBatch = 0;              // batch x world
  int64_t samplesPerOptimizerStep = 0;  // batch x world x grad_accum
  int64_t batchesPerEpoch = 0;          // ceil(samples / global batch), rounded up to a multiple of workers
  int64_t samplesPerEpoch = 0;          // what one epoch really draws: batches x global batch
  int64_t samplesTotal = 0;             // over all epochs
  std::optional<uint64_t> shardCount;
  std::optional<double> passes;  // samplesTotal / total_samples when the latter is known
};

struct DerivedFigures {
  int64_t worldSize = 0;
  int64_t stepsPerEpoch = 0;  // iterations: one batch of every dataset (the shortest loader)
  int64_t optimizerStepsPerEpoch = 0;
  int64_t totalSteps = 0;
  int64_t totalOptimizerSteps = 0;
  int64_t schedulerSteps =
      0;  // T of the lr schedule (ours: optimizer steps; compat: the reference's formula)
  int64_t checkpointEverySteps = 0;  // 0 = per epoch only
  int64_t checkpointsPerEpoch = 0;   // step checkpoints written per epoch
  std::vector<DatasetFigures> datasets;
};

// max_tokens 0 -> the type's default (laion 32, mmc4 256).
int64_t resolvedMaxTokens(const DatasetConfig& d);

// Whether gradients and parameters go over NCCL: dist_backend nccl, or auto with device cuda. With
// device auto each rank decides at start (Trainer::deviceBackend); this answers for a CPU rank, gloo.
bool deviceGroupIsNccl(const ParallelConfig& parallel);

// REQUIRES: positive batch sizes, workers and world (validate first).
DerivedFigures deriveFigures(const RunConfig& config);

// Human-readable report, one figure per line.
std::string formatFigures(const DerivedFigures& figures);

}  // namespace fs::protocol
