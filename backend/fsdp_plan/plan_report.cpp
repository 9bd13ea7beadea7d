#include "backend/fsdp_plan/plan_report.h"

#include <cstdio>
#include <sstream>

namespace fs::fsdp_plan {
namespace {

protocol::PlanPrecision precisionRecord(const PrecisionPlan& p) {
  return {dtypeName(p.weight), dtypeName(p.compute), dtypeName(p.param), dtypeName(p.reduce),
          dtypeName(p.frozen)};
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

protocol::PlanRecord toPlanRecord(const Plan& plan) {
  protocol::PlanRecord r;
  r.world = plan.topology.world;
  r.nodes = plan.topology.nodes;
  const auto& inv = plan.inventory;
  r.model.family = inv.family;
  r.model.params = inv.numel();
  r.model.trainableParams = inv.trainableNumel();
  r.model.paramTensors = static_cast<int64_t>(inv.params.size());
  r.model.buffers = inv.buffers;
  for (const auto& g : inv.tiedGroups) r.model.tied.push_back({g.param, g.aliases});
  r.precision = precisionRecord(plan.precision);
  r.referencePrecision = precisionRecord(plan.referencePrecision);
  r.activations.withoutCheckpointing = plan.activations.withoutCheckpointing;
  r.activations.withCheckpointing = plan.activations.withCheckpointing;
  for (const auto& d : plan.activations.datasets) {
    r.activations.datasets.push_back(
        {d.name, d.batch, d.tokens, d.images, d.withoutCheckpointing, d.withCheckpointing});
  }
  for (size_t li = 0; li < plan.layouts.size(); ++li) {
    const auto& l = plan.layouts[li];
    // The reference's layout is the last when the plan models it (plan.h).
    const bool reference = l.policy == "reference_fsdp1";
    const auto& precision = reference ? plan.referencePrecision : plan.precision;
    protocol::PlanLayout layout;
    layout.policy = l.policy;
    for (const auto& u : l.units) {
      protocol::PlanLayoutUnit unit;
      unit.path = u.path;
      unit.moduleType = u.moduleType;
      unit.paramCount = u.paramCount;
      unit.frozenParams = u.frozenCount;
      unit.unfrozenParams = u.unfrozenCount;
      unit.trainable = u.trainable;
      unit.dtype = dtypeName(u.dtype);
      unit.gatherOrder = u.gatherOrder;
      unit.inBackward = u.inBackward;
      unit.params = u.params;
      for (const auto& name : u.params) {
        const auto* p = inv.param(name);
        const int64_t numel = p != nullptr ? p->numel : 0;
        const bool trainable = p != nullptr && p->trainable;
        // NOTE [Flat groups]: frozen parameters are stored in the frozen dtype (ours); FSDP1 stores all
        // alike.
        const Dtype storage = reference || trainable ? precision.weight : precision.frozen;
        unit.paramDetails.push_back({numel, numel * dtypeBytes(storage), trainable});
      }
      unit.aliases = u.aliases;
      unit.mergedFrom = u.mergedFrom;
      layout.units.push_back(std::move(unit));
    }
    r.layouts.push_back(std::move(layout));
  }
  for (const auto& e : plan.entries) {
    protocol::PlanEstimateRecord est;
    est.engine = e.engine;
    est.policy = e.policy;
    est.strategy = strategyName(e.strategy);
    est.layout = static_cast<int64_t>(e.layout);
    est.shardGroupSize = e.shards.shardSize;
    for (const auto& us : e.shards.units) {
      protocol::PlanUnitShardsRecord unit;
      unit.shardBytes.assign(static_cast<size_t>(plan.topology.world), us.shardBytes());
      unit.paddingElems = us.padding();
      for (const auto& g : us.groups) {
        unit.groups.push_back({g.trainable, g.gradients, g.numel, g.padding, g.shardNumel,
                               dtypeName(g.storage), g.shardBytes()});
      }
      est.units.push_back(std::move(unit));
    }
    const auto& precision = e.engine == "reference" ? plan.referencePrecision : plan.precision;
    for (size_t u = 0; u < est.units.size(); ++u) {
      // Unsharded, padding included, in the gathered dtype (even where one rank holds it all and gathers
      // nothing: the step walk then counts no extra bytes, memory_estimate.h).
      for (const auto& g : e.shards.units[u].groups)
        est.units[u].gatheredBytes += g.paddedNumel(e.shards.shardSize) * dtypeBytes(precision.param);
      if (u < e.memory.unitPeaks.size()) {
        est.units[u].peakBytes = e.memory.unitPeaks[u].bytes;
        est.units[u].peakPhase = walkPhaseName(e.memory.unitPeaks[u].phase);
      }
    }
    est.peakUnit = e.memory.stepPeakUnit;
    est.peakPhase = walkPhaseName(e.memory.stepPeakPhase);
    const auto& m = e.memory;
    est.perRank = {m.parameters,
                   m.gradients,
                   m.optimizer,
                   m.modelState(),
                   m.gatheredPeak,
                   m.activations,
                   m.activationsWithoutCheckpointing,
                   m.activationsWithCheckpointing,
                   m.inputs,
                   m.loader,
                   m.stepPeak,
                   m.peak()};
    r.estimates.push_back(std::move(est));
  }
  r.notes = plan.notes;
  return r;
}

nlohmann::json planToJson(const Plan& plan) {
  return protocol::planToJson(toPlanRecord(plan));
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
  if (plan.device == PlanDevice::kCuda) {
    os << "\nper-rank device memory at the peak (CUDA caching allocator: blocks rounded to 512 B, segments "
          "of "
          "2 MiB / 20 MiB / the request rounded to 2 MiB; reserved is the least it holds: "
          "docs/planner.md):\n";
    os << pad("engine", 10) << pad("policy", 18) << pad("strategy", 14) << pad("peak", 11, true)
       << pad("allocated", 11, true) << pad("reserved", 11, true) << pad("segments", 9, true) << "\n";
    for (const auto& e : plan.entries) {
      if (!e.device) continue;
      os << pad(e.engine, 10) << pad(e.policy, 18) << pad(strategyName(e.strategy), 14)
         << pad(formatBytes(e.memory.peak()), 11, true) << pad(formatBytes(e.device->allocated), 11, true)
         << pad(formatBytes(e.device->reserved), 11, true) << pad(std::to_string(e.device->segments), 9, true)
         << "\n";
    }
  }
  for (const auto& n : plan.notes) os << "note: " << n << "\n";
  return os.str();
}

}  // namespace fs::fsdp_plan
