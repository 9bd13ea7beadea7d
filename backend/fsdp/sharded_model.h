// A model sharded unit by unit over a communicator, with the strategies of
// NOTE [Sharding strategies] below.
//
// NOTE [Unit lifecycle]: the model announces each wrapped module through
// its unit hooks (model/unit_hooks.h). In forward, before(): gather the
// unit; after(): free it again (full_shard, hybrid_shard; under every
// strategy but no_shard when its forward built no graph) and hook the
// output's gradient, so the unit is gathered again just before its
// backward; a hook on the input's gradient frees it once its backward is
// done. Everything not in a unit (embeddings, final norm, head) forms the
// root unit, gathered from beginForward() to finishBackward(). Inside
// activation-checkpointed regions the forward runs without a graph, so the
// recompute during backward gathers the unit (before() in the backward phase
// only gathers). finishBackward() reduce-scatters every trainable unit's
// gradients into its shards and frees what is still gathered.
//
// Every rank runs the same graph in the same order (CPU autograd runs on
// the calling thread), so the collectives issued from hooks line up.
// Units must not share parameters (tied parameters belong in one unit).
//
// Thread-safety: the rank's training thread.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/dist/communicator.h"
#include "backend/fsdp/flat_param.h"
#include "backend/model/unit_hooks.h"

namespace fs::fsdp {

// NOTE [Sharding strategies]:
//   full_shard     shard over every rank; free after forward and after backward
//   shard_grad_op  shard over every rank; keep gathered from forward to the unit's backward
//   hybrid_shard   shard inside a node (ranksPerNode ranks), replicate across nodes:
//                  reduce-scatter inside the node, then all-reduce between replicas
//   no_shard       every rank holds everything (DDP through the same code): gradients
//                  all-reduced; parameters stay gathered
enum class Strategy { kFullShard, kShardGradOp, kHybridShard, kNoShard };
// "full_shard" | "shard_grad_op" | "hybrid_shard" | "no_shard"; c10::Error naming the value otherwise.
Strategy parseStrategy(const std::string& name);

struct ShardingOptions {
  Strategy strategy = Strategy::kFullShard;
  int ranksPerNode = 1;  // hybrid_shard: the shard group; must divide the world size
};

struct UnitSpec {
  std::string path;                          // module path in the model, e.g. "perceiver"
  std::shared_ptr<torch::nn::Module> module;
};

class ShardedModel final : public model::UnitHooks {
 public:
  struct Unit {
    std::string path;
    torch::nn::Module* module = nullptr;  // null for the root unit
    std::vector<std::unique_ptr<FlatParameter>> flats;  // one per requires-grad setting present
  };

  // Moves every parameter of `root` into the flat parameters of its unit;
  // `units` must be disjoint modules inside `root`. Throws c10::Error naming
  // a parameter two units claim.
  // Every rank calls it at the same point (hybrid_shard and no_shard split
  // the communicator).
  ShardedModel(torch::nn::Module& root, std::vector<UnitSpec> units, std::shared_ptr<dist::Communicator> comm,
               ShardingOptions options = {});
  const ShardingOptions& options() const { return options_; }
  // The ranks the parameters are sharded over (solo under no_shard).
  dist::Communicator& shardGroup() const { return *shardComm_; }

  const std::vector<Unit>& units() const { return units_; }  // the root unit last
  // The trainable shards, for the optimizer.
  std::vector<torch::Tensor> trainableShards() const;
  // Full bytes gathered now, over every unit.
  int64_t gatheredBytes() const;

  void beginForward();
  void beginBackward();
  // After backward: the gradients reduce-scattered (summed over ranks,
  // times `scale`, added to the shards' gradients); every unit freed.
  void finishBackward(double scale);

  void before(torch::nn::Module& module, const at::Tensor& input) override;
  void after(torch::nn::Module& module, const at::Tensor& output) override;

 private:
  enum class Phase { kIdle, kForward, kBackward };
  void gather(Unit& u);
  void free(Unit& u);

  bool freeAfterForward() const;

  std::shared_ptr<dist::Communicator> comm_;
  ShardingOptions options_;
  std::shared_ptr<dist::Communicator> shardComm_;      // where parameters are sharded
  std::shared_ptr<dist::Communicator> replicateComm_;  // null: no replicas
  std::vector<Unit> units_;
  std::map<const torch::nn::Module*, size_t> unitOf_;
  Phase phase_ = Phase::kIdle;
};

}  // namespace fs::fsdp
