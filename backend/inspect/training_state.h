// The training state a checkpoint holds, in words: the optimizer's state per
// parameter (with its group's hyper-parameters), the LR scheduler's state,
// and - for our checkpoints - the step, epoch, RNG generators and data
// position. Read from a CheckpointIndex; the optimizer moments are reduced to
// L2 norms (tensor data read on demand). No LibTorch.
//
//   auto ckpt = CheckpointIndex::open(path);
//   auto state = readTrainingState(*ckpt);     // errors name the file and entry
//   std::cout << formatTrainingState(*state);
//
// Parts a checkpoint does not carry (OpenFlamingo's have no RNG or data
// position; a bare state dict has nothing) are "not in this checkpoint":
// empty optionals plus a line in `absent`, never an error.
//
// Thread-safety: plain values and free functions; reading touches the
// index's mapped files only through its const methods.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/inspect/checkpoint_index.h"
#include "backend/protocol/wire/checkpoint_record.h"

namespace fs::inspect {

struct OptimizerGroup {
  std::size_t index = 0;
  double lr = 0;
  double weightDecay = 0;
  double beta1 = 0;
  double beta2 = 0;
  double eps = 0;
  std::optional<double> initialLr;  // set by a scheduler
  std::size_t params = 0;           // parameters in the group
};

// One entry of the optimizer's per-parameter state (AdamW).
struct OptimizerParamState {
  std::int64_t id = 0;  // the state dict's key: position over all groups' params
  std::string name;     // our parameter name; "" when the checkpoint does not tell (see nameSource)
  std::optional<std::size_t> group;
  std::optional<double> step;
  std::optional<double> expAvgNorm;    // L2 norm of exp_avg
  std::optional<double> expAvgSqNorm;  // L2 norm of exp_avg_sq
  std::vector<std::int64_t> shape;     // exp_avg's
};

struct OptimizerState {
  std::vector<OptimizerGroup> groups;
  std::vector<OptimizerParamState> params;  // ascending id; only parameters stepped so far
  // Where the names come from: "the sharded index's param_names", "the manifest's
  // trainable parameters", "model_state_dict's keys" (NOTE [Optimizer ids]), or "" (none).
  std::string nameSource;
};

struct SchedulerState {
  std::optional<std::int64_t> lastEpoch;  // LambdaLR counts optimizer steps here
  std::optional<std::int64_t> stepCount;  // _step_count
  std::vector<double> baseLrs;
  std::vector<double> lastLr;  // _last_lr
};

struct RngGenerator {
  std::string name;  // "torch CPU", "torch CUDA 0", "own (xoshiro256**)"
  std::uint64_t bytes = 0;
  std::string hash;  // "xxh64:<16 hex>" of its bytes: equal states hash equal
};

// The data position as the checkpoint stores it (one record with the
// engine's: backend/protocol/wire/checkpoint_record.h).
using DataPositionInfo = protocol::DataPositionRecord;

// Our resume record ("flamingo_studio" / the sharded index's "resume") in
// words: the RNG states reduced to sizes and hashes.
struct ResumeInfo {
  std::string kind;  // "step" | "epoch" | "final"
  std::int64_t step = 0;
  std::int64_t iteration = 0;
  std::int64_t epoch = 0;
  std::vector<RngGenerator> rng;
  std::optional<DataPositionInfo> data;
};

struct TrainingState {
  std::string path;
  CheckpointFormat format = CheckpointFormat::kTorchSave;
  std::optional<std::int64_t> epoch;  // the top-level "epoch" (OpenFlamingo's last finished epoch)
  std::optional<OptimizerState> optimizer;
  std::optional<SchedulerState> scheduler;
  std::optional<ResumeInfo> resume;
  std::vector<std::string> absent;  // "RNG state and data position: not in this checkpoint", ...
};

// Errors (Corruption) name the checkpoint's file and the entry at fault.
StatusOr<TrainingState> readTrainingState(const CheckpointIndex& checkpoint);

// Our resume record, field for field (NOTE [Checkpoint records]): a torch.save
// file's "flamingo_studio" (read torch-free, record_pyvalue.h) or a sharded
// index's "resume"; nullopt when the checkpoint carries none. Errors as above.
StatusOr<std::optional<protocol::ResumeRecord>> readResumeRecord(const CheckpointIndex& checkpoint);

// "epoch 2: laion 850 batches of 4 = 3,400 samples, mmc4 850 batches of 2 =
// 1,700 samples, on rank 0 of 1 (shards source)"; per rank with "(N over W
// ranks)" when world > 1; exact to what the position holds. With cursors,
// per dataset "laion at shard /d/laion-000012.tar (index 12 of 40, pass 0,
// worker 0) with 340 samples read from it, 850 batches of 4 = 3,400 samples
// this epoch", datasets separated by "; ".
std::string describeDataPosition(const DataPositionInfo& position);

// The human report `flamingo-train checkpoint state` prints.
std::string formatTrainingState(const TrainingState& state, std::size_t max_params = 0);

}  // namespace fs::inspect
