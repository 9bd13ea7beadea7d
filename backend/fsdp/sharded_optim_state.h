// The optimizer over FSDP shards, and its state in the unsharded layout.
//
// NOTE [Sharded optimizer state]: each trainable flat parameter's shard is
// one optimizer tensor (AdamW is elementwise, so stepping a shard is
// stepping its slice of every member: the same update as per parameter).
// Checkpoints keep PyTorch's unsharded AdamW state dict (the one a
// single-process run writes, indices over the trainable parameters in
// OpenFlamingo's groups), so a run resumes on any world size and strategy:
// toShardState() slices the unsharded moments into this rank's shards,
// toFullState() all-gathers them back (a collective over the shard group).
// The members of a flat parameter step together, so they share one step
// count; an unsharded state whose members of one flat disagree is refused.
//
// Thread-safety: the rank's training thread; toFullState on every rank of
// the shard group at the same point.
#pragma once

#include <vector>

#include "backend/fsdp/sharded_model.h"
#include "backend/protocol/status.h"
#include "backend/step/optimizer.h"

namespace fs::fsdp {

struct ShardParameter {
  step::NamedParameter param;  // named "<unit path>#<flat index>", decay group set
  FlatParameter* flat = nullptr;
};

// Every trainable shard in unit order, for a step::GroupedAdamW.
std::vector<ShardParameter> shardParameters(const ShardedModel& model);

// `full`: a state dict of a GroupedAdamW over `fullParams` (the trainable
// model parameters, in model order). Returns the state dict of a
// GroupedAdamW over `shards`, with the same hyperparameters. Errors name the
// parameters.
protocol::StatusOr<step::OptimizerStateDict> toShardState(const step::OptimizerStateDict& full,
                                                          const std::vector<step::NamedParameter>& fullParams,
                                                          const std::vector<ShardParameter>& shards,
                                                          const ShardedModel& model, double weightDecay);

// The inverse: `shardState` from the GroupedAdamW over `shards`; the result
// is what a GroupedAdamW over `fullParams` would hold. Collective.
step::OptimizerStateDict toFullState(const step::OptimizerStateDict& shardState,
                                     const std::vector<step::NamedParameter>& fullParams,
                                     const std::vector<ShardParameter>& shards, ShardedModel& model,
                                     double weightDecay);

}  // namespace fs::fsdp
