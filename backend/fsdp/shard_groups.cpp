#include "backend/fsdp/shard_groups.h"

#include <algorithm>

#include "backend/distributed/communicator.h"

namespace fs::fsdp {

ShardGroups makeShardGroups(const std::shared_ptr<distributed::Communicator>& comm,
                            const ShardingOptions& options) {
  const int world = comm->size();
  ShardGroups g;
  switch (options.strategy) {
    case Strategy::kFullShard:
    case Strategy::kShardGradOp:
      g.shard = comm;
      break;
    case Strategy::kNoShard:
      g.shard = distributed::makeSoloCommunicator();
      g.replicate = comm;
      break;
    case Strategy::kHybridShard: {
      TORCH_CHECK(options.ranksPerNode >= 1 && world % options.ranksPerNode == 0,
                  "hybrid_shard: ", options.ranksPerNode, " ranks per node do not divide a world of ", world);
      g.shard = comm->split(distributed::intraNodeGroups(world, options.ranksPerNode), "fsdp intra-node");
      g.replicate = comm->split(distributed::interNodeGroups(world, options.ranksPerNode), "fsdp inter-node");
      break;
    }
  }
  if (options.valuesFromNodeLeader) {
    const int perNode = std::clamp(options.ranksPerNode, 1, world);
    TORCH_CHECK(world % perNode == 0, "delayed init: ", perNode, " ranks per node do not divide a world of ",
                world);
    if (perNode == world) {
      g.valuesFrom = comm;
    } else if (options.strategy == Strategy::kHybridShard) {
      g.valuesFrom = g.shard;  // hybrid's shard group is the node already
    } else {
      g.valuesFrom = comm->split(distributed::intraNodeGroups(world, perNode), "fsdp init node");
    }
  }
  return g;
}

}  // namespace fs::fsdp
