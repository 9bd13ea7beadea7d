#include "backend/fsdp_plan/sharding.h"

#include <algorithm>

namespace fs::fsdp_plan {

using protocol::Status;

const std::vector<std::string>& strategyNames() {
  static const std::vector<std::string> names = {"full_shard", "shard_grad_op", "hybrid_shard",
                                                 "no_shard",   "single",        "ddp"};
  return names;
}

const std::vector<std::string>& fsdpStrategyNames() {
  static const std::vector<std::string> names(strategyNames().begin(), strategyNames().begin() + 4);
  return names;
}

bool isReplicated(Strategy strategy) {
  return strategy == Strategy::kSingle || strategy == Strategy::kDdp;
}

std::string strategyName(Strategy strategy) {
  return strategyNames().at(static_cast<size_t>(strategy));
}

protocol::StatusOr<Strategy> strategyFromName(const std::string& name, const std::string& field) {
  const auto& names = strategyNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Strategy>(i);
  }
  return Status::invalidArgument(field + ": unknown sharding strategy '" + name +
                                 "' (known: full_shard, shard_grad_op, hybrid_shard, no_shard, single, ddp)");
}

Status checkTopology(const Topology& t) {
  if (t.world < 1) return Status::invalidArgument("--world: must be >= 1, got " + std::to_string(t.world));
  if (t.nodes < 1 || t.nodes > t.world)
    return Status::invalidArgument("--nodes: must be between 1 and --world " + std::to_string(t.world) +
                                   ", got " + std::to_string(t.nodes));
  if (t.world % t.nodes != 0)
    return Status::invalidArgument("--world " + std::to_string(t.world) + " is not divisible by --nodes " +
                                   std::to_string(t.nodes) +
                                   ": every node must run the same number of ranks");
  return Status::ok();
}

int64_t shardGroupSize(Strategy strategy, const Topology& t) {
  switch (strategy) {
    case Strategy::kFullShard:
    case Strategy::kShardGradOp:
      return t.world;
    case Strategy::kHybridShard:
      return t.world / t.nodes;
    case Strategy::kNoShard:
    case Strategy::kSingle:
    case Strategy::kDdp:
      return 1;
  }
  return 1;
}

int64_t shardNumel(int64_t numel, int64_t shard_size) {
  return (std::max<int64_t>(numel, 1) + shard_size - 1) / shard_size;
}

int64_t paddingNumel(int64_t numel, int64_t shard_size) {
  return shardNumel(numel, shard_size) * shard_size - numel;
}

int64_t UnitShards::shardBytes() const {
  int64_t b = 0;
  for (const auto& g : groups) b += g.shardBytes();
  return b;
}

int64_t UnitShards::padding() const {
  int64_t p = 0;
  for (const auto& g : groups) p += g.padding;
  return p;
}

ShardPlan planShards(const Layout& layout, const PrecisionPlan& precision, Strategy strategy,
                     const Topology& topology, bool referenceGroups) {
  ShardPlan plan;
  plan.strategy = strategy;
  plan.topology = topology;
  plan.shardSize = shardGroupSize(strategy, topology);
  auto group = [&](int64_t numel, bool trainable, bool gradients, Dtype storage) {
    FlatGroup g;
    g.trainable = trainable;
    g.gradients = gradients;
    g.numel = numel;
    g.shardNumel = shardNumel(numel, plan.shardSize);
    g.padding = paddingNumel(numel, plan.shardSize);
    g.storage = storage;
    return g;
  };
  for (const auto& u : layout.units) {
    UnitShards us;
    if (referenceGroups) {
      const bool grads = u.trainable || u.unfrozenCount > 0;
      us.groups.push_back(group(u.paramCount, u.trainable, grads, u.dtype));
    } else {
      // The optimizer steps a flat group as one tensor, so weight-decay groups do not share one.
      if (u.decayedCount > 0) us.groups.push_back(group(u.decayedCount, true, true, precision.weight));
      if (u.trainableCount() > u.decayedCount)
        us.groups.push_back(group(u.trainableCount() - u.decayedCount, true, true, precision.weight));
      if (u.frozenCount > 0) us.groups.push_back(group(u.frozenCount, false, false, precision.frozen));
    }
    plan.units.push_back(us);
  }
  return plan;
}

}  // namespace fs::fsdp_plan
