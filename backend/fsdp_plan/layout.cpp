#include "backend/fsdp_plan/layout.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace fs::fsdp_plan {
namespace {

std::string parentPath(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

// The innermost picked module at or above `module` ("" = the root unit).
std::string ownerOf(const std::string& module, const std::set<std::string>& picked) {
  std::string path = module;
  while (!path.empty()) {
    if (picked.count(path) != 0) return path;
    path = parentPath(path);
  }
  return "";
}

bool underVision(const std::string& path) {
  return path == "vision_encoder" || path.rfind("vision_encoder.", 0) == 0;
}

}  // namespace

const Unit* Layout::unitOfParam(const std::string& name) const {
  for (const auto& u : units) {
    if (std::find(u.params.begin(), u.params.end(), name) != u.params.end()) return &u;
  }
  return nullptr;
}

int64_t Layout::numel() const {
  int64_t n = 0;
  for (const auto& u : units) n += u.paramCount;
  return n;
}

protocol::StatusOr<Layout> buildLayout(const ParamInventory& inv, const WrapPolicy& policy,
                                       const PrecisionPlan& precision) {
  auto selected = selectUnitModules(inv, policy);
  if (!selected) return selected.status();
  const std::set<std::string> picked(selected->begin(), selected->end());

  // Parameter -> unit path; first forward use per unit.
  std::map<std::string, std::string> unitOf;
  std::map<std::string, int64_t> firstUse;
  auto use = [&](const std::string& unit, int64_t order) {
    auto it = firstUse.find(unit);
    if (it == firstUse.end() || order < it->second) firstUse[unit] = order;
  };
  for (const auto& p : inv.params) {
    unitOf[p.name] = ownerOf(p.module, picked);
    use(unitOf[p.name], p.forwardOrder);
  }
  // NOTE [Tied parameters in the layout]
  std::map<std::string, std::vector<std::string>> aliasesOf;
  std::map<std::string, std::vector<std::string>> mergedInto;
  for (const auto& g : inv.tiedGroups) {
    const auto* param = inv.param(g.param);
    std::vector<std::pair<int64_t, std::string>> claims = {{param->forwardOrder, unitOf[g.param]}};
    for (const auto& m : g.aliasModules) claims.push_back({inv.module(m)->forwardOrder, ownerOf(m, picked)});
    // The root is gathered first (NOTE [Gather order]).
    for (auto& c : claims) c.first = c.second.empty() ? std::numeric_limits<int64_t>::min() : c.first;
    const auto owner = std::min_element(claims.begin(), claims.end())->second;
    unitOf[g.param] = owner;
    use(owner, param->forwardOrder);
    for (const auto& a : g.aliases) aliasesOf[owner].push_back(a);
    for (const auto& c : claims) {
      if (c.second != owner) mergedInto[owner].push_back(c.second);
    }
  }

  std::map<std::string, Unit> units;
  for (const auto& p : inv.params) {
    auto& u = units[unitOf[p.name]];
    u.path = unitOf[p.name];
    u.params.push_back(p.name);
    u.paramCount += p.numel;
    u.frozenCount += p.trainable ? 0 : p.numel;
    // NOTE [Weight-decay groups] (step/optimizer.h): the optimizer's rule, which the runtime splits by.
    u.decayedCount += p.trainable && p.name.find("gated_cross_attn") != std::string::npos ? p.numel : 0;
  }
  Layout layout;
  layout.policy = policy.name();
  for (auto& [path, u] : units) {
    u.moduleType = inv.module(path)->type;
    u.trainable = u.trainableCount() > 0;
    u.dtype = u.trainable ? precision.weight : precision.frozen;
    u.inBackward = !underVision(path);
    u.aliases = aliasesOf[path];
    for (const auto& m : mergedInto[path]) {
      // A unit that claimed only the alias owns nothing now.
      if (units.count(m) == 0) u.mergedFrom.push_back(m);
    }
    layout.units.push_back(u);
  }
  std::stable_sort(layout.units.begin(), layout.units.end(), [&](const Unit& a, const Unit& b) {
    if (a.path.empty() != b.path.empty()) return a.path.empty();
    return firstUse[a.path] < firstUse[b.path];
  });
  for (size_t i = 0; i < layout.units.size(); ++i) layout.units[i].gatherOrder = static_cast<int>(i);
  return layout;
}

protocol::StatusOr<Layout> buildReferenceLayout(const ParamInventory& inv, const PrecisionPlan& ours) {
  const auto ref = referencePrecision(ours);
  WrapPolicy policy;
  policy.kind = WrapKind::kOpenFlamingo;
  auto layout = buildLayout(inv, policy, ref);
  if (!layout) return layout;
  layout->policy = "reference_fsdp1";
  for (auto& u : layout->units) {
    // The reference sets requires_grad on every decoder layer for the whole run.
    if (u.moduleType == "DecoderLayer") u.unfrozenCount = u.frozenCount;
    u.dtype = ref.weight;
  }
  return layout;
}

}  // namespace fs::fsdp_plan
