#include "backend/fsdp_plan/memory_estimate.h"

#include <algorithm>
#include <string>

namespace fs::fsdp_plan {
namespace {

// Unsharded gradient of a unit in backward until its reduce-scatter.
int64_t unitGradientBytes(const UnitShards& unit, int64_t shard_size, const PrecisionPlan& precision) {
  int64_t b = 0;
  for (const auto& g : unit.groups) {
    if (!g.gradients) continue;
    if (shard_size == 1 && precision.param == g.storage) continue;  // accumulates straight into the shard
    b += g.paddedNumel(shard_size) * dtypeBytes(precision.param);
  }
  return b;
}

// Whether the unit's forward runs inside an activation-checkpointed region
// (NOTE [Activation checkpointing] in backend/model: the Perceiver, each gated
// cross-attention block, each decoder layer), i.e. under no-grad.
bool insideCheckpointedRegion(const std::string& path) {
  if (path == "perceiver" || path.rfind("perceiver.", 0) == 0) return true;
  for (const char* region : {"gated_cross_attn_layer", "decoder_layer"}) {
    const std::string name(region);
    for (size_t at = path.find(name); at != std::string::npos; at = path.find(name, at + 1)) {
      const bool starts = at == 0 || path[at - 1] == '.';
      const bool ends = at + name.size() == path.size() || path[at + name.size()] == '.';
      if (starts && ends) return true;
    }
  }
  return false;
}

}  // namespace

int64_t forwardWindow(const protocol::ParallelConfig& p) {
  if (p.limit_all_gathers > 0) return p.limit_all_gathers;
  return p.forward_prefetch ? 2 : 1;
}

int64_t backwardWindow(const protocol::ParallelConfig& p) {
  if (p.limit_all_gathers > 0) return p.limit_all_gathers;
  return p.backward_prefetch == "none" ? 1 : 2;
}

int64_t unitGatheredBytes(const UnitShards& unit, int64_t shard_size, const PrecisionPlan& precision) {
  int64_t b = 0;
  for (const auto& g : unit.groups) {
    if (shard_size == 1 && precision.param == g.storage) continue;  // the shard is the parameter
    b += g.paddedNumel(shard_size) * dtypeBytes(precision.param);
  }
  return b;
}

RankMemory estimateRankMemory(const Layout& layout, const ShardPlan& shards, const PrecisionPlan& precision,
                              const protocol::RunConfig& config, const ActivationEstimate& activations) {
  RankMemory r;
  for (const auto& u : shards.units) {
    for (const auto& g : u.groups) {
      r.parameters += g.shardBytes();
      if (g.gradients) r.gradients += g.shardNumel * dtypeBytes(precision.weight);
      if (g.trainable) r.optimizer += 2 * g.shardNumel * dtypeBytes(precision.weight);
    }
  }

  // Gathered peak over the non-root units in gather order.
  const int64_t s = shards.shardSize;
  int64_t root = 0;
  std::vector<int64_t> gathered, grads, backwardUnits, tied, held;
  // shard_grad_op keeps a unit gathered from its forward to its backward only when that forward built a
  // graph: a unit run inside a checkpointed region is freed after its forward and gathered again for
  // the recompute, as under full_shard (NOTE [Unit lifecycle] in backend/fsdp/sharded_model.h).
  const bool checkpointing = config.model.gradient_checkpointing;
  int64_t tiedGathered = 0, tiedGrad = 0;
  for (size_t i = 0; i < layout.units.size(); ++i) {
    const int64_t g = unitGatheredBytes(shards.units[i], s, precision);
    if (layout.units[i].path.empty()) {
      root = g;
      // The root's own gradient stays unsharded until the end of backward.
      root += unitGradientBytes(shards.units[i], s, precision);
      continue;
    }
    gathered.push_back(g);
    grads.push_back(unitGradientBytes(shards.units[i], s, precision));
    backwardUnits.push_back(layout.units[i].inBackward ? 1 : 0);
    held.push_back(backwardUnits.back() && !(checkpointing && insideCheckpointedRegion(layout.units[i].path)) ? 1 : 0);
    tied.push_back(layout.units[i].aliases.empty() ? 0 : 1);
    if (tied.back()) {
      tiedGathered += gathered.back();
      tiedGrad += grads.back();
    }
  }
  const auto fwdK = static_cast<size_t>(forwardWindow(config.parallel));
  const auto bwdK = static_cast<size_t>(backwardWindow(config.parallel));
  int64_t peak = 0;
  for (size_t i = 0; i < gathered.size(); ++i) {
    int64_t w = 0;
    for (size_t j = i; j < std::min(gathered.size(), i + fwdK); ++j) w += gathered[j];
    peak = std::max(peak, w);
  }
  // Backward runs in reverse order over the units that take part in it. Under shard_grad_op the held
  // units stay gathered until their own backward: at the turn all of them at once, then beside the
  // window of the others (every unit is held without checkpointing).
  const bool sgo = shards.strategy == Strategy::kShardGradOp;
  int64_t heldSum = 0;
  std::vector<size_t> order;
  for (size_t i = gathered.size(); i-- > 0;) {
    if (!backwardUnits[i]) continue;
    if (sgo && held[i]) {
      heldSum += gathered[i];
    } else {
      order.push_back(i);
    }
  }
  if (sgo) {
    int64_t maxGrad = 0;
    for (size_t i = 0; i < gathered.size(); ++i) {
      if (backwardUnits[i] && !tied[i]) maxGrad = std::max(maxGrad, grads[i]);
    }
    peak = std::max(peak, heldSum + maxGrad + tiedGrad);
  }
  for (size_t a = 0; a < order.size(); ++a) {
    int64_t w = heldSum + grads[order[a]] + (tied[order[a]] ? 0 : tiedGrad);
    for (size_t b = a; b < std::min(order.size(), a + bwdK); ++b) w += gathered[order[b]];
    peak = std::max(peak, w);
  }
  // The tied head at the turn: its unit gathered again beside the last one.
  if (!sgo && !order.empty())
    peak = std::max(peak, tiedGathered + tiedGrad + (tied[order[0]] ? 0 : gathered[order[0]]));
  r.gatheredPeak = root + peak;

  r.activationsWithoutCheckpointing = activations.withoutCheckpointing;
  r.activationsWithCheckpointing = activations.withCheckpointing;
  r.activations =
      config.model.gradient_checkpointing ? activations.withCheckpointing : activations.withoutCheckpointing;
  return r;
}

}  // namespace fs::fsdp_plan
