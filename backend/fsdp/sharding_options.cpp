#include "backend/fsdp/sharding_options.h"

#include <c10/util/Exception.h>

namespace fs::fsdp {

Strategy parseStrategy(const std::string& name) {
  if (name == "full_shard") return Strategy::kFullShard;
  if (name == "shard_grad_op") return Strategy::kShardGradOp;
  if (name == "hybrid_shard") return Strategy::kHybridShard;
  if (name == "no_shard") return Strategy::kNoShard;
  TORCH_CHECK(false, "parallel.sharding_strategy: unknown strategy '", name,
              "' (known: full_shard, shard_grad_op, hybrid_shard, no_shard)");
}

}  // namespace fs::fsdp
