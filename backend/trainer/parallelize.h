// Flamingo-specific wrapping: the run config's wrap policy and sharding
// strategy applied to a built model from outside (the model code stays
// single-device). The units are the planner's layout (fsdp_plan), so the
// run holds exactly what `flamingo-train plan` shows.
//
// Thread-safety: the rank's training thread; every rank calls
// parallelizeFlamingo and (under FSDP) gateValues at the same point.
#pragma once

#include <memory>
#include <vector>

#include "backend/distributed/communicator.h"
#include "backend/fsdp/sharded_model.h"
#include "backend/model/flamingo.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"

namespace fs::trainer {

struct ParallelizeOptions {
  int ranksPerNode = 1;  // hybrid_shard's shard group
  bool valuesFromNodeLeader =
      false;  // delayed init: only each node's first rank holds values (ShardingOptions)
  // The rank's device: where units are gathered and the shards live (ShardingOptions::device); the model's
  // parameters are not there on a rank that built shapes only.
  c10::Device device{c10::kCPU};
};

// Shards `model` (already frozen as OpenFlamingo does and holding its
// initial or resumed weights) over `comm` and installs the unit hooks.
// Trainable parameters split into flat parameters by weight-decay group
// (step::decaysWeight), so the optimizer steps each shard as one tensor.
// Errors name the config field (wrap policy, patterns, strategy, a world
// the node size does not divide).
protocol::StatusOr<std::shared_ptr<fsdp::ShardedModel>> parallelizeFlamingo(
    model::Flamingo& model, const protocol::RunConfig& config,
    std::shared_ptr<distributed::Communicator> comm, const ParallelizeOptions& options);

// tanh of every gate. `sharded`: null without FSDP; with it the gates live
// in shards and are read with one collective.
std::vector<model::GateValues> gateValues(model::FlamingoImpl& model, fsdp::ShardedModel* sharded);

}  // namespace fs::trainer
