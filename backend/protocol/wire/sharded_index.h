// index.json of a sharded checkpoint (NOTE [Sharded checkpoints] in
// backend/checkpoint/checkpoint_sharded.h): its record and its one codec. The
// engine (backend/checkpoint/checkpoint_sharded_index.h) writes and reads it,
// converting the optimizer, scheduler and resume parts to its LibTorch-side
// types; the GUI (app/checkpoints/sharded_index_reader.h) reads it to list
// tensors. Spec: docs/run-directory.md, "Sharded checkpoints".
//
//   {"format": "flamingo_studio.sharded_checkpoint", "version": 1,
//    "world_size": 4, "strategy": "hybrid_shard", "shard_group_size": 2,
//    "files": ["rank-0.pt", "rank-1.pt"],            // files[s]: shard s
//    "units": [{"path": "perceiver", "flats": [{"key": "perceiver#0",
//       "trainable": true, "dtype": "Float", "numel": 1000, "padding": 0,
//       "shard_numel": 500, "optimizer_state": true,
//       "members": [{"name": "perceiver.latents", "shape": [8, 16],
//                    "offset": 0, "numel": 128}, ...]}]}, ...],
//    "parameter_order": [...], "buffers": [...],     // buffers in files[0]
//    "optimizer": {"param_groups": [{"lr": ..., "betas": [..], "eps": ..,
//       "weight_decay": .., "amsgrad": .., "maximize": .., "capturable": ..,
//       "initial_lr": .., "params": [0, 1], "param_names": [...]}, ...]},
//    "lr_scheduler": {"base_lrs", "last_epoch", "_step_count", "verbose",
//       "_get_lr_called_within_step", "_last_lr"},
//    "epoch": 0,
//    "resume": {"format", "kind", "step", "iteration", "epoch",
//       "data_position" (its JSON text), "rng_torch_cpu" (hex),
//       "rng_torch_cuda" [hex], "rng_own" [4 x uint64], "manifest" (its JSON
//       text), "grad_scaler" (fp16 runs)}}   // protocol::ResumeRecord
//
// Every field is required except initial_lr, and in "resume" format (absent
// before 0.3: read as 1) and grad_scaler (fp16 runs). The optimizer groups are the
// unsharded layout (indices over the model's trainable parameters). The
// codec checks fields and types only; whether the layout adds up is the
// reader's to check (each side refuses what it cannot use).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/checkpoint_record.h"

namespace fs::protocol {

inline constexpr std::int64_t kShardedIndexVersion = 1;
inline constexpr const char* kShardedFormatName = "flamingo_studio.sharded_checkpoint";
inline constexpr const char* kShardedIndexFile = "index.json";

// One parameter inside a flat parameter.
struct ShardedMember {
  std::string name;
  std::vector<std::int64_t> shape;
  std::int64_t offset = 0;  // in the flat (unpadded) buffer
  std::int64_t numel = 0;
  bool operator==(const ShardedMember&) const = default;
};

struct ShardedFlat {
  std::string key;  // "<unit path>#<flat index>"
  bool trainable = false;
  std::string dtype;       // c10's spelling, as the checkpoint manifest: "Float"
  std::int64_t numel = 0;  // without padding
  std::int64_t padding = 0;
  std::int64_t shardNumel = 0;  // (numel + padding) / shard group size
  bool optimizerState = false;  // the rank files hold its optimizer moments
  std::vector<ShardedMember> members;
  bool operator==(const ShardedFlat&) const = default;
};

struct ShardedUnit {
  std::string path;
  std::vector<ShardedFlat> flats;
  bool operator==(const ShardedUnit&) const = default;
};

// An AdamW param group as torch's state dict holds it.
struct ShardedParamGroup {
  double lr = 0;
  std::vector<double> betas;  // two
  double eps = 0;
  double weightDecay = 0;
  bool amsgrad = false;
  bool maximize = false;
  bool capturable = false;
  std::optional<double> initialLr;  // present when a scheduler is attached
  std::vector<std::int64_t> params;
  std::vector<std::string> paramNames;
  bool operator==(const ShardedParamGroup&) const = default;
};

struct ShardedOptimizer {
  std::vector<ShardedParamGroup> paramGroups;
  bool operator==(const ShardedOptimizer&) const = default;
};

// torch's LambdaLR state dict ("_step_count" etc. on the wire).
struct ShardedLrScheduler {
  std::vector<double> baseLrs;
  std::int64_t lastEpoch = 0;
  std::int64_t stepCount = 0;
  bool verbose = false;
  bool getLrCalledWithinStep = false;
  std::vector<double> lastLr;
  bool operator==(const ShardedLrScheduler&) const = default;
};

struct ShardedIndexRecord {
  std::string format = kShardedFormatName;
  std::int64_t version = kShardedIndexVersion;
  std::int64_t worldSize = 1;
  std::string strategy;
  std::int64_t shardGroupSize = 1;
  std::vector<std::string> files;
  std::vector<ShardedUnit> units;
  std::vector<std::string> parameterOrder;
  std::vector<std::string> buffers;
  ShardedOptimizer optimizer;
  ShardedLrScheduler scheduler;  // "lr_scheduler"
  std::int64_t epoch = 0;
  ResumeRecord resume;  // checkpoint_record.h (NOTE [Checkpoint records])
  bool operator==(const ShardedIndexRecord&) const = default;
};

// "rank-<shard>.pt"
std::string shardedRankFileName(std::int64_t shard);

// Pretty-printed (one-space indent), ending in '\n'.
std::string encodeShardedIndex(const ShardedIndexRecord& index);

// Errors name the field by its JSON path, without the file (callers add it):
// Corruption "not JSON: ..." / "not a JSON object"; InvalidArgument
// "format: 'x' is not flamingo_studio.sharded_checkpoint",
// "units[0].flats[0].members: missing", "epoch: not an integer"; Unsupported
// "version: 2 is not a version this build reads (1); a newer Flamingo Studio
// wrote it". When `versionFound` is given it receives the version read (0
// before it is read), so a caller can word its own message.
StatusOr<ShardedIndexRecord> decodeShardedIndex(std::string_view text, std::int64_t* versionFound = nullptr);

}  // namespace fs::protocol
