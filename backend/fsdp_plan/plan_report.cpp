#include "backend/fsdp_plan/plan_report.h"

#include <cstdio>
#include <sstream>

namespace fs::fsdp_plan {
namespace {

nlohmann::json precisionJson(const PrecisionPlan& p) {
  return {{"weight", dtypeName(p.weight)},
          {"compute", dtypeName(p.compute)},
          {"param", dtypeName(p.param)},
          {"reduce", dtypeName(p.reduce)},
          {"frozen", dtypeName(p.frozen)}};
}

std::string pad(std::string s, size_t width, bool right = false) {
  if (s.size() >= width) return s + " ";
  return right ? std::string(width - s.size(), ' ') + s + " " : s + std::string(width - s.size(), ' ') + " ";
}

std::string count(int64_t n) {
  char buf[32];
  if (n >= 1000000000) {
    std::snprintf(buf, sizeof(buf), "%.2fB", static_cast<double>(n) / 1e9);
  } else if (n >= 1000000) {
    std::snprintf(buf, sizeof(buf), "%.1fM", static_cast<double>(n) / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(n));
  }
  return buf;
}

}  // namespace

std::string formatBytes(int64_t bytes) {
  char buf[32];
  const auto b = static_cast<double>(bytes);
  if (bytes >= (int64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / (1 << 30));
  } else if (bytes >= (int64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / (1 << 20));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024);
  } else {
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

protocol::LayoutEvent toLayoutEvent(const Layout& layout, const ShardPlan& shards, int64_t maxUnitsGathered) {
  protocol::LayoutEvent event;
  event.max_units_gathered = static_cast<int>(maxUnitsGathered);
  for (size_t i = 0; i < layout.units.size(); ++i) {
    const auto& u = layout.units[i];
    protocol::LayoutUnit lu;
    lu.path = u.path;
    lu.param_count = u.paramCount;
    lu.dtype = dtypeName(u.dtype);
    lu.trainable = u.trainable;
    lu.frozen_params = u.frozenCount;
    lu.shard_bytes.assign(static_cast<size_t>(shards.topology.world), shards.units[i].shardBytes());
    lu.padding_elems = shards.units[i].padding();
    lu.gather_order = u.gatherOrder;
    event.units.push_back(std::move(lu));
  }
  return event;
}

nlohmann::json planToJson(const Plan& plan) {
  nlohmann::json j;
  j["schema"] = kPlanJsonSchema;
  j["world"] = plan.topology.world;
  j["nodes"] = plan.topology.nodes;
  nlohmann::json tied = nlohmann::json::array();
  for (const auto& g : plan.inventory.tiedGroups)
    tied.push_back({{"param", g.param}, {"aliases", g.aliases}});
  j["model"] = {{"family", plan.inventory.family},
                {"params", plan.inventory.numel()},
                {"trainable_params", plan.inventory.trainableNumel()},
                {"param_tensors", plan.inventory.params.size()},
                {"buffers", plan.inventory.buffers},
                {"tied", tied}};
  j["precision"] = precisionJson(plan.precision);
  j["reference_precision"] = precisionJson(plan.referencePrecision);
  nlohmann::json act = {{"without_checkpointing", plan.activations.withoutCheckpointing},
                        {"with_checkpointing", plan.activations.withCheckpointing},
                        {"datasets", nlohmann::json::array()}};
  for (const auto& d : plan.activations.datasets) {
    act["datasets"].push_back({{"name", d.name},
                               {"batch", d.batch},
                               {"tokens", d.tokens},
                               {"images", d.images},
                               {"without_checkpointing", d.withoutCheckpointing},
                               {"with_checkpointing", d.withCheckpointing}});
  }
  j["activations"] = act;
  j["layouts"] = nlohmann::json::array();
  for (const auto& l : plan.layouts) {
    nlohmann::json units = nlohmann::json::array();
    for (const auto& u : l.units) {
      units.push_back({{"path", u.path},
                       {"module_type", u.moduleType},
                       {"param_count", u.paramCount},
                       {"frozen_params", u.frozenCount},
                       {"unfrozen_params", u.unfrozenCount},
                       {"trainable", u.trainable},
                       {"dtype", dtypeName(u.dtype)},
                       {"gather_order", u.gatherOrder},
                       {"in_backward", u.inBackward},
                       {"params", u.params},
                       {"aliases", u.aliases},
                       {"merged_from", u.mergedFrom}});
    }
    j["layouts"].push_back({{"policy", l.policy}, {"units", units}});
  }
  j["estimates"] = nlohmann::json::array();
  for (const auto& e : plan.entries) {
    nlohmann::json units = nlohmann::json::array();
    for (const auto& us : e.shards.units) {
      nlohmann::json groups = nlohmann::json::array();
      for (const auto& g : us.groups) {
        groups.push_back({{"trainable", g.trainable},
                          {"gradients", g.gradients},
                          {"numel", g.numel},
                          {"padding_elems", g.padding},
                          {"shard_numel", g.shardNumel},
                          {"dtype", dtypeName(g.storage)},
                          {"shard_bytes", g.shardBytes()}});
      }
      units.push_back(
          {{"shard_bytes", std::vector<int64_t>(static_cast<size_t>(plan.topology.world), us.shardBytes())},
           {"padding_elems", us.padding()},
           {"groups", groups}});
    }
    const auto& m = e.memory;
    j["estimates"].push_back({{"engine", e.engine},
                              {"policy", e.policy},
                              {"strategy", strategyName(e.strategy)},
                              {"layout", e.layout},
                              {"shard_group_size", e.shards.shardSize},
                              {"units", units},
                              {"per_rank",
                               {{"parameters", m.parameters},
                                {"gradients", m.gradients},
                                {"optimizer", m.optimizer},
                                {"model_state", m.modelState()},
                                {"gathered_peak", m.gatheredPeak},
                                {"activations", m.activations},
                                {"activations_without_checkpointing", m.activationsWithoutCheckpointing},
                                {"activations_with_checkpointing", m.activationsWithCheckpointing},
                                {"inputs", m.inputs},
                                {"step_peak", m.stepPeak},
                                {"peak", m.peak()}}}});
  }
  j["notes"] = plan.notes;
  return j;
}

std::string formatPlan(const Plan& plan, size_t layoutIndex, size_t entryIndex) {
  std::ostringstream os;
  const auto& inv = plan.inventory;
  os << "model: " << inv.family << " LM, " << count(inv.numel()) << " parameters ("
     << count(inv.trainableNumel()) << " trainable), " << inv.params.size() << " tensors, no buffers"
     << (inv.tiedGroups.empty() ? "" : ", tied output head") << "\n";
  os << "world: " << plan.topology.world << " ranks on " << plan.topology.nodes << " node(s); dtypes: weight "
     << dtypeName(plan.precision.weight) << ", gathered " << dtypeName(plan.precision.param) << ", frozen "
     << dtypeName(plan.precision.frozen) << ", reduce " << dtypeName(plan.precision.reduce) << "\n\n";

  const auto& layout = plan.layouts.at(layoutIndex);
  const auto& entry = plan.entries.at(entryIndex);
  os << "units (" << layout.policy << ", " << strategyName(entry.strategy) << ", shard group of "
     << entry.shards.shardSize << "):\n";
  os << pad("#", 4, true) << pad("unit", 58) << pad("type", 25) << pad("params", 9, true)
     << pad("frozen", 9, true) << pad("dtype", 9) << pad("shard/rank", 11, true) << pad("padding", 8, true)
     << "\n";
  for (size_t i = 0; i < layout.units.size(); ++i) {
    const auto& u = layout.units[i];
    const auto& s = entry.shards.units[i];
    std::string path = u.path.empty() ? "(root)" : u.path;
    if (!u.mergedFrom.empty()) path += " +tied";
    os << pad(std::to_string(u.gatherOrder), 4, true) << pad(path, 58) << pad(u.moduleType, 25)
       << pad(count(u.paramCount), 9, true) << pad(count(u.frozenCount), 9, true)
       << pad(dtypeName(u.dtype), 9) << pad(formatBytes(s.shardBytes()), 11, true)
       << pad(std::to_string(s.padding()), 8, true) << "\n";
  }
  os << "\nper-rank memory (model state exact; gathered and activations estimated; act = per micro-batch):\n";
  os << pad("engine", 10) << pad("policy", 18) << pad("strategy", 14) << pad("params", 11, true)
     << pad("grads", 11, true) << pad("optim", 11, true) << pad("state", 11, true)
     << pad("gathered", 11, true) << pad("act", 11, true) << pad("act/no-ckpt", 12, true)
     << pad("act/ckpt", 11, true) << pad("peak", 11, true) << "\n";
  for (const auto& e : plan.entries) {
    const auto& m = e.memory;
    os << pad(e.engine, 10) << pad(e.policy, 18) << pad(strategyName(e.strategy), 14)
       << pad(formatBytes(m.parameters), 11, true) << pad(formatBytes(m.gradients), 11, true)
       << pad(formatBytes(m.optimizer), 11, true) << pad(formatBytes(m.modelState()), 11, true)
       << pad(formatBytes(m.gatheredPeak), 11, true) << pad(formatBytes(m.activations), 11, true)
       << pad(formatBytes(m.activationsWithoutCheckpointing), 12, true)
       << pad(formatBytes(m.activationsWithCheckpointing), 11, true) << pad(formatBytes(m.peak()), 11, true)
       << "\n";
  }
  os << "(act: as model.gradient_checkpointing says; act/no-ckpt and act/ckpt: without and with it; "
        "peak = state + the batches + gathered and activations at the step's highest moment, "
        "not their sum: docs/planner.md)\n";
  for (const auto& n : plan.notes) os << "note: " << n << "\n";
  return os.str();
}

}  // namespace fs::fsdp_plan
