// index.json of a sharded checkpoint (NOTE [Sharded checkpoints] in
// checkpoint_sharded.h): the one definition of its fields, read and written
// here only.
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
//    "resume": {"kind", "step", "iteration", "epoch", "data_position" (its
//       JSON text), "rng_torch_cpu" (hex), "rng_torch_cuda" [hex],
//       "rng_own" [4 x uint64], "manifest" (its JSON text)}}
//
// The optimizer groups are the unsharded layout (indices over the model's
// trainable parameters, OpenFlamingo's two groups). A reader rejects a
// version other than kShardedIndexVersion and names the field that is
// missing or malformed.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "backend/engine/checkpoint_io.h"

namespace fs::engine {

inline constexpr int64_t kShardedIndexVersion = 1;
inline constexpr const char* kShardedFormatName = "flamingo_studio.sharded_checkpoint";
inline constexpr const char* kShardedIndexFile = "index.json";
// "rank-<shard>.pt"
std::string shardedRankFileName(int64_t shard);

struct ShardedMember {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0;  // in the flat (unpadded) buffer
  int64_t numel = 0;
};

struct ShardedFlat {
  std::string key;  // "<unit path>#<flat index>"
  bool trainable = false;
  std::string dtype;  // c10's spelling, as the checkpoint manifest: "Float"
  int64_t numel = 0;  // without padding
  int64_t padding = 0;
  int64_t shardNumel = 0;  // (numel + padding) / shard group size
  bool optimizerState = false;  // the rank files hold its optimizer moments
  std::vector<ShardedMember> members;
};

struct ShardedUnit {
  std::string path;
  std::vector<ShardedFlat> flats;
};

struct ShardedIndex {
  int64_t version = kShardedIndexVersion;
  int64_t worldSize = 1;
  std::string strategy;
  int64_t shardGroupSize = 1;
  std::vector<std::string> files;
  std::vector<ShardedUnit> units;
  std::vector<std::string> parameterOrder;
  std::vector<std::string> buffers;
  std::vector<train::AdamWGroupStateDict> paramGroups;  // with params and paramNames
  train::LrSchedulerStateDict scheduler;
  int64_t epoch = 0;
  ResumeState resume;
};

std::string encodeShardedIndex(const ShardedIndex& index);
// `where` names the file in errors.
protocol::StatusOr<ShardedIndex> decodeShardedIndex(const std::string& text, const std::filesystem::path& where);
// Reads and decodes `dir`/index.json; NotFound naming it when absent.
protocol::StatusOr<ShardedIndex> readShardedIndex(const std::filesystem::path& dir);

// The index's dtype spelling back to the type (c10::toString's inverse for
// the dtypes parameters can have).
protocol::StatusOr<c10::ScalarType> dtypeFromName(const std::string& name);

}  // namespace fs::engine
