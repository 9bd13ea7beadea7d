#include "backend/fsdp/unit_members.h"

#include <set>

namespace fs::fsdp {

UnitMembers assignUnitMembers(torch::nn::Module& root, const std::vector<UnitSpec>& specs,
                              const std::function<int(const std::string& name)>& trainableGroup) {
  // Each parameter belongs to the innermost unit around it.
  std::vector<std::set<const torch::nn::Module*>> inside(specs.size());
  for (size_t u = 0; u < specs.size(); ++u) {
    TORCH_CHECK(specs[u].module, "ShardedModel: unit '", specs[u].path, "' has no module");
    for (const auto& m : specs[u].module->modules(/*include_self=*/false)) inside[u].insert(m.get());
  }
  std::map<const c10::TensorImpl*, size_t> owner;
  for (size_t u = 0; u < specs.size(); ++u) {
    for (const auto& p : specs[u].module->parameters()) {
      auto [it, fresh] = owner.emplace(p.unsafeGetTensorImpl(), u);
      if (fresh) continue;
      const size_t v = it->second;
      if (inside[v].count(specs[u].module.get())) {
        it->second = u;  // u lies inside v
      } else {
        TORCH_CHECK(inside[u].count(specs[v].module.get()), "ShardedModel: units '", specs[v].path, "' and '",
                    specs[u].path, "' share a parameter; tied parameters must be in one unit");
      }
    }
  }
  UnitMembers out;
  out.units.resize(specs.size() + 1);
  std::set<const c10::TensorImpl*> seen;
  for (const auto& p : root.named_parameters()) {
    if (!seen.insert(p.value().unsafeGetTensorImpl()).second) continue;  // shared inside the root: once
    auto it = owner.find(p.value().unsafeGetTensorImpl());
    const size_t u = it == owner.end() ? specs.size() : it->second;
    const bool trainable = p.value().requires_grad();
    const int group = trainable && trainableGroup ? trainableGroup(p.key()) : 0;
    out.units[u][{trainable, group}].push_back({p.key(), p.value()});
    out.order.push_back(p.key());
  }
  return out;
}

}  // namespace fs::fsdp
