// ShardGroups: the communicators a ShardedModel works over, made from the run's
// one communicator by its strategy (NOTE [Sharding strategies] in
// sharding_options.h): where parameters are sharded, where replicas are
// all-reduced, and where delayed init's values are broadcast from.
//
// Thread-safety: made once, at the ShardedModel's construction, on the rank's
// training thread; every rank at the same point (the splits are collective).
#pragma once

#include <memory>

#include "backend/distributed/communicator.h"
#include "backend/fsdp/sharding_options.h"

namespace fs::fsdp {

struct ShardGroups {
  std::shared_ptr<distributed::Communicator> shard;      // where parameters are sharded
  std::shared_ptr<distributed::Communicator> replicate;  // null: no replicas
  // NOTE [Values from the node's first rank]: the group each flat parameter's values are broadcast in;
  // null without delayed init.
  std::shared_ptr<distributed::Communicator> valuesFrom;
  // Whether the values come from more than one node (their hashes are then compared).
  bool valuesFromSeveralNodes(int world) const { return valuesFrom && valuesFrom->size() < world; }
};

// Throws c10::Error naming the option when ranksPerNode does not divide the world.
ShardGroups makeShardGroups(const std::shared_ptr<distributed::Communicator>& comm,
                            const ShardingOptions& options);

}  // namespace fs::fsdp
