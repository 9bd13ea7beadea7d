// Sharded checkpoints (checkpoint.format: sharded, parallel.mode: fsdp):
// each rank writes its own FSDP shards, nobody gathers the model.
//
// NOTE [Sharded checkpoints]: a sharded checkpoint is a directory named as
// the full checkpoint file would be ("checkpoint_step5.pt/"), holding
//   rank-<s>.pt  for every shard s of the shard group: a torch.save dict (the
//                full checkpoint's pickle writer, so Python's torch.load
//                reads it) with "shards" {flat key: shard of that flat
//                parameter, padding included}, "optimizer" {flat key:
//                {step, exp_avg, exp_avg_sq}} for the trainable flats that
//                have state, "hashes" {flat key: xxh64 of the shard}, and in
//                rank-0.pt "buffers" (those the full checkpoint keeps);
//   index.json   the rest (checkpoint_sharded_index.h): layout of every
//                unit's flat parameters and their members, the optimizer's
//                unsharded param groups, scheduler, epoch, resume state.
// Shard s of every flat parameter lives in rank-<s>.pt. Under hybrid_shard
// and no_shard the replicas hold identical shards: only the shard group of
// global rank 0 (the first node; rank 0 alone under no_shard) writes, so
// global rank s writes rank-<s>.pt. Flat keys are the optimizer's shard
// names, "<unit path>#<flat index>".
//
// Writing: rank 0 makes an empty ".<name>.partial" directory (the scan
// ignores names starting with '.'), every rank meets at a collective, the
// writers write their files into it atomically (temp name, fsync, rename),
// a second collective sums the failures (when one failed, or index.json
// cannot be written, rank 0 removes the ".partial" directory at once, so a
// full disk gets its space back), and only when none failed does
// rank 0 write index.json and move the directory to its name (an older one
// of that name, say the one this run resumed from, is moved aside and
// removed only then; NOTE [Replacing a sharded checkpoint] in
// checkpoint_recovery.h). Every rank file must reach rank 0's run directory: a
// shared filesystem when the shard group spans nodes (under hybrid_shard
// only the first node writes). A directory without index.json, or whose
// index names a rank file that is missing, is incomplete: the
// newest-checkpoint scan skips it by name (checkpoint_io.h).
//
// Reading turns a directory back into the CheckpointContents of the full
// file a single process writes (parameters unpadded and reassembled from
// the slices, optimizer state in PyTorch's unsharded AdamW layout as
// fsdp::toFullState builds it), reading tensors through the lazy
// tensorfile reader (mapped, never loaded whole), so resume works on any
// world size and mode and `flamingo-train checkpoint consolidate` writes
// the OpenFlamingo file.
//
// Thread-safety: free functions; writeShardedCheckpoint is a collective
// (every rank of `world` calls it at the same point).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/distributed/communicator.h"
#include "backend/fsdp/sharded_optim_state.h"

namespace fs::checkpoint {

struct ShardedCheckpointSave {
  const fsdp::ShardedModel* model = nullptr;
  std::string strategy;                                       // parallel.sharding_strategy
  const std::vector<fsdp::ShardParameter>* shards = nullptr;  // what the optimizer steps
  step::OptimizerStateDict shardOptimizer;                    // of the GroupedAdamW over `shards`
  std::vector<step::NamedParameter> trainable;                // the model's trainable parameters, model order
  double weightDecay = 0;
  std::vector<std::string> parameterOrder;  // every parameter once, model order
  model::NamedTensors buffers;              // the buffers the full checkpoint keeps
  int64_t epoch = 0;                        // CheckpointContents::epoch
  step::LrSchedulerStateDict scheduler;
  ResumeState resume;  // manifest without tensor records: the reader adds them (NOTE above)
};

// Collective over `world`. `dir` is the checkpoint's path in the run
// directory. Every rank returns the same verdict: an error on any writer is
// reported on every rank (naming the rank), and then no index is written.
// Every change goes through `env` (null: the real file system; protocol/io/write_env.h).
protocol::Status writeShardedCheckpoint(const std::filesystem::path& dir, const ShardedCheckpointSave& save,
                                        distributed::Communicator& world, protocol::WriteEnv* env = nullptr);

// The contents a full checkpoint of the same state would hold. Errors name
// the file and what is wrong (no index.json, a missing rank file, a shard of
// the wrong size or dtype, an unknown index version, a damaged shard).
// `progress` (may be empty): flat parameters read so far and in all, after each.
protocol::StatusOr<CheckpointContents> readShardedCheckpoint(
    const std::filesystem::path& dir, const std::function<void(int64_t done, int64_t total)>& progress = {});

// Cheap check for the start-up scan: index.json parses and every rank file it
// names exists. Returns the resume iteration; errors say why it is incomplete.
protocol::StatusOr<int64_t> shardedCheckpointIteration(const std::filesystem::path& dir);

}  // namespace fs::checkpoint
