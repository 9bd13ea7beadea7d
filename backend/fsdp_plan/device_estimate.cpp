#include "backend/fsdp_plan/device_estimate.h"

namespace fs::fsdp_plan {

protocol::StatusOr<PlanDevice> planDeviceFromName(const std::string& name, const std::string& field) {
  if (name == "cpu") return PlanDevice::kCpu;
  if (name == "cuda") return PlanDevice::kCuda;
  return protocol::Status::invalidArgument(field + ": unknown device '" + name + "' (expected cpu or cuda)");
}

std::vector<int64_t> peakRequests(const ParamInventory& inventory, const ShardPlan& shards,
                                  const PrecisionPlan& precision, const RankMemory& memory) {
  std::vector<int64_t> out;
  const int64_t weight = dtypeBytes(precision.weight);
  if (isReplicated(shards.strategy)) {
    // NOTE [Replicated modes] in memory_estimate.h: every parameter in the weight dtype.
    int64_t trainable = 0;
    for (const auto& p : inventory.params) out.push_back(p.numel * weight);
    for (const auto& p : inventory.params) {
      if (!p.trainable) continue;
      out.push_back(p.numel * weight);  // .grad
      trainable += p.numel * weight;
    }
    if (shards.strategy == Strategy::kDdp && shards.topology.world > 1) out.push_back(trainable);  // buckets
    for (const auto& p : inventory.params) {
      if (!p.trainable) continue;
      out.push_back(p.numel * weight);  // exp_avg
      out.push_back(p.numel * weight);  // exp_avg_sq
    }
  } else {
    for (const auto& u : shards.units) {
      for (const auto& g : u.groups) out.push_back(g.shardBytes());
    }
    for (const auto& u : shards.units) {
      for (const auto& g : u.groups) {
        if (g.gradients) out.push_back(g.shardNumel * weight);
      }
    }
    for (const auto& u : shards.units) {
      for (const auto& g : u.groups) {
        if (!g.trainable) continue;
        out.push_back(g.shardNumel * weight);
        out.push_back(g.shardNumel * weight);
      }
    }
  }
  out.push_back(memory.inputs);
  out.push_back(memory.loader);
  out.push_back(memory.stepPeak);
  return out;
}

DeviceBytes estimateCudaMemory(const ParamInventory& inventory, const ShardPlan& shards,
                               const PrecisionPlan& precision, const RankMemory& memory) {
  return cudaLiveSet(peakRequests(inventory, shards, precision, memory));
}

}  // namespace fs::fsdp_plan
