#include "backend/fsdp/sharded_model.h"

#include <set>

namespace fs::fsdp {

Strategy parseStrategy(const std::string& name) {
  if (name == "full_shard") return Strategy::kFullShard;
  if (name == "shard_grad_op") return Strategy::kShardGradOp;
  if (name == "hybrid_shard") return Strategy::kHybridShard;
  if (name == "no_shard") return Strategy::kNoShard;
  TORCH_CHECK(false, "parallel.sharding_strategy: unknown strategy '", name,
              "' (known: full_shard, shard_grad_op, hybrid_shard, no_shard)");
}

ShardedModel::ShardedModel(torch::nn::Module& root, std::vector<UnitSpec> specs,
                           std::shared_ptr<dist::Communicator> comm, ShardingOptions options)
    : comm_(std::move(comm)), options_(options) {
  const int world = comm_->size();
  switch (options_.strategy) {
    case Strategy::kFullShard:
    case Strategy::kShardGradOp: shardComm_ = comm_; break;
    case Strategy::kNoShard:
      shardComm_ = dist::makeSoloCommunicator();
      replicateComm_ = comm_;
      break;
    case Strategy::kHybridShard: {
      TORCH_CHECK(options_.ranksPerNode >= 1 && world % options_.ranksPerNode == 0, "hybrid_shard: ",
                  options_.ranksPerNode, " ranks per node do not divide a world of ", world);
      shardComm_ = comm_->split(dist::intraNodeGroups(world, options_.ranksPerNode), "fsdp intra-node");
      replicateComm_ = comm_->split(dist::interNodeGroups(world, options_.ranksPerNode), "fsdp inter-node");
      break;
    }
  }
  std::map<const c10::TensorImpl*, size_t> owner;
  for (size_t u = 0; u < specs.size(); ++u) {
    TORCH_CHECK(specs[u].module, "ShardedModel: unit '", specs[u].path, "' has no module");
    for (const auto& p : specs[u].module->parameters()) {
      auto [it, fresh] = owner.emplace(p.unsafeGetTensorImpl(), u);
      TORCH_CHECK(fresh, "ShardedModel: units '", specs[it->second].path, "' and '", specs[u].path,
                  "' share a parameter; tied parameters must be in one unit");
    }
  }
  // Members per unit and requires-grad setting, in the model's parameter order.
  std::vector<std::map<bool, std::vector<FlatMember>>> members(specs.size() + 1);
  std::set<const c10::TensorImpl*> seen;
  for (const auto& p : root.named_parameters()) {
    if (!seen.insert(p.value().unsafeGetTensorImpl()).second) continue;  // shared inside the root: once
    auto it = owner.find(p.value().unsafeGetTensorImpl());
    const size_t u = it == owner.end() ? specs.size() : it->second;
    members[u][p.value().requires_grad()].push_back({p.key(), p.value()});
  }
  for (size_t u = 0; u <= specs.size(); ++u) {
    Unit unit;
    unit.path = u < specs.size() ? specs[u].path : "(root)";
    unit.module = u < specs.size() ? specs[u].module.get() : nullptr;
    for (auto& [trainable, list] : members[u]) {
      unit.flats.push_back(
          std::make_unique<FlatParameter>(std::move(list), shardComm_->rank(), shardComm_->size()));
    }
    if (unit.module) unitOf_[unit.module] = units_.size();
    units_.push_back(std::move(unit));
  }
}

std::vector<torch::Tensor> ShardedModel::trainableShards() const {
  std::vector<torch::Tensor> out;
  for (const auto& u : units_) {
    for (const auto& f : u.flats) {
      if (f->trainable()) out.push_back(f->shard());
    }
  }
  return out;
}

int64_t ShardedModel::gatheredBytes() const {
  int64_t n = 0;
  for (const auto& u : units_) {
    for (const auto& f : u.flats) n += f->gatheredBytes();
  }
  return n;
}

bool ShardedModel::freeAfterForward() const {
  return options_.strategy == Strategy::kFullShard || options_.strategy == Strategy::kHybridShard;
}

void ShardedModel::gather(Unit& u) {
  for (auto& f : u.flats) f->gather(*shardComm_, "gather " + u.path);
}

void ShardedModel::free(Unit& u) {
  if (options_.strategy == Strategy::kNoShard) return;  // nothing to gather back from
  for (auto& f : u.flats) f->free();
}

void ShardedModel::beginForward() {
  phase_ = Phase::kForward;
  gather(units_.back());
}

void ShardedModel::beginBackward() { phase_ = Phase::kBackward; }

void ShardedModel::finishBackward(double scale) {
  // Reverse unit order, as backward produces them; every rank the same.
  for (size_t i = units_.size(); i-- > 0;) {
    Unit& u = units_[i];
    for (auto& f : u.flats) {
      if (f->trainable()) f->reduceGradients(*shardComm_, scale, "reduce-scatter " + u.path, replicateComm_.get());
    }
    free(u);
  }
  phase_ = Phase::kIdle;
}

void ShardedModel::before(torch::nn::Module& module, const at::Tensor& input) {
  auto it = unitOf_.find(&module);
  if (it == unitOf_.end()) return;
  Unit& u = units_[it->second];
  gather(u);
  if (phase_ == Phase::kForward && input.defined() && input.requires_grad()) {
    // Once the gradient reaching the unit's input exists, its backward is over.
    input.register_hook([this, i = it->second](const at::Tensor& g) {
      free(units_[i]);
      return g;
    });
  }
}

void ShardedModel::after(torch::nn::Module& module, const at::Tensor& output) {
  if (phase_ != Phase::kForward) return;  // a recompute in backward: keep it for the backward that follows
  auto it = unitOf_.find(&module);
  if (it == unitOf_.end()) return;
  // Without a graph (the vision tower; checkpointed regions, which gather again in their recompute) no
  // backward needs the unit: free it whatever the strategy.
  const bool backwardNeedsIt = output.defined() && output.requires_grad();
  if (freeAfterForward() || !backwardNeedsIt) free(units_[it->second]);
  if (backwardNeedsIt) {
    output.register_hook([this, i = it->second](const at::Tensor& g) {
      gather(units_[i]);
      return g;
    });
  }
}

}  // namespace fs::fsdp
