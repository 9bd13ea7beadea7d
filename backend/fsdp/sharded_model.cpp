#include "backend/fsdp/sharded_model.h"

#include <set>

namespace fs::fsdp {

ShardedModel::ShardedModel(torch::nn::Module& root, std::vector<UnitSpec> specs,
                           std::shared_ptr<dist::Communicator> comm)
    : comm_(std::move(comm)) {
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
      unit.flats.push_back(std::make_unique<FlatParameter>(std::move(list), comm_->rank(), comm_->size()));
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

void ShardedModel::gather(Unit& u) {
  for (auto& f : u.flats) f->gather(*comm_, "gather " + u.path);
}

void ShardedModel::free(Unit& u) {
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
      if (f->trainable()) f->reduceGradients(*comm_, scale, "reduce-scatter " + u.path);
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
  free(units_[it->second]);
  if (output.defined() && output.requires_grad()) {
    output.register_hook([this, i = it->second](const at::Tensor& g) {
      gather(units_[i]);
      return g;
    });
  }
}

}  // namespace fs::fsdp
