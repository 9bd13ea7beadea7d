// ShardingOptions: how a ShardedModel shards (strategy, prefetch, mixed
// precision, delayed init, node-shared shards, CPU offload), as the trainer
// reads them from the config's `parallel` section.
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <optional>
#include <string>

#include "backend/fsdp/flat_param.h"

namespace fs::fsdp {

// NOTE [Sharding strategies]:
//   full_shard     shard over every rank; free after forward and after backward
//   shard_grad_op  shard over every rank; keep gathered from forward to the unit's backward
//   hybrid_shard   shard inside a node (ranksPerNode ranks), replicate across nodes:
//                  reduce-scatter inside the node, then all-reduce between replicas
//   no_shard       every rank holds everything (DDP through the same code): gradients
//                  all-reduced; the members view the rank's whole shard (FlatParameter),
//                  so nothing is ever gathered and the optimizer's update is in place
enum class Strategy { kFullShard, kShardGradOp, kHybridShard, kNoShard };
// "full_shard" | "shard_grad_op" | "hybrid_shard" | "no_shard"; c10::Error naming the value otherwise.
Strategy parseStrategy(const std::string& name);

struct ShardingOptions {
  Strategy strategy = Strategy::kFullShard;
  int ranksPerNode = 1;  // hybrid_shard: the shard group; must divide the world size
  bool forwardPrefetch = false;
  enum class BackwardPrefetch { kNone, kPre, kPost } backwardPrefetch = BackwardPrefetch::kNone;
  int limitAllGathers = 0;  // units gathered or in flight at once that a prefetch may reach; 0 = no limit
  // Trainable parameters of one unit with different keys go to different
  // flat parameters (the optimizer's weight-decay groups: a flat parameter
  // is stepped as one tensor). Null: one trainable flat parameter per unit.
  std::function<int(const std::string& name)> trainableGroup;
  // Mixed precision (NOTE [Mixed precision in a flat parameter]): unset keeps the parameters' dtype.
  FlatDtypes dtypes;
  // Delayed init (NOTE [Values from the node's first rank]): only the first rank of each node
  // (ranksPerNode ranks laid out node by node) holds the parameters' values.
  bool valuesFromNodeLeader = false;
  // NOTE [Node-shared shards] (distributed/shared_shards.h): when the shard group's communicator offers it
  // (shared memory on one node), the shards live in one node-shared segment and gathers copy them
  // without a collective. Writers of the shards then keep beginShardWrite / endShardWrite.
  bool sharedShards = true;
  // NOTE [CPU offload] (flat_param.h): the shards, their gradients and the optimizer's state in host
  // memory; gathers copy each shard to the model's device. Shards are then never node-shared.
  bool offloadShards = false;
  // Where the model computes: units are gathered there, and the shards live there unless offloaded.
  // Unset: the parameters' device, which a rank that built shapes only does not have (its parameters are
  // host tensors without values: NOTE [Values from the node's first rank]).
  std::optional<c10::Device> device;
};

// NOTE [Values from the node's first rank]: under delayed init the model's
// values exist on one rank per node (model/shapes_only.h: the others built
// shapes only), which read the pretrained weights once for its node. Each
// flat parameter's values are broadcast from it inside the node as the flat
// parameter is built, so no other rank ever holds more than one flat
// parameter unsharded and no weights cross between nodes. The first ranks of
// different nodes must have built the same values (same seed, same files):
// each hashes what it broadcasts and, on more than one node, the hashes are
// compared once every flat parameter is built; the first flat parameter
// whose values differ is named (c10::Error) rather than training a model
// stitched from different weights. A shapes-only rank's parameters are host
// tensors without values: the flat parameters it receives into are made on
// ShardingOptions::device (the rank's device, where the leader's values are
// broadcast from: on a GPU the device group is NCCL, which takes nothing
// else), and its parameters are re-pointed there.

}  // namespace fs::fsdp
