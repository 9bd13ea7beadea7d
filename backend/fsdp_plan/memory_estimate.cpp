#include "backend/fsdp_plan/memory_estimate.h"

#include <algorithm>
#include <string>

#include "backend/fsdp_plan/step_walk.h"
#include "backend/protocol/config/derived.h"

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

// Whether `path` names `segment` as one of its dot-separated parts.
bool hasSegment(const std::string& path, const std::string& segment) {
  for (size_t at = path.find(segment); at != std::string::npos; at = path.find(segment, at + 1)) {
    const bool starts = at == 0 || path[at - 1] == '.';
    const bool ends = at + segment.size() == path.size() || path[at + segment.size()] == '.';
    if (starts && ends) return true;
  }
  return false;
}

// Whether the unit's forward runs inside an activation-checkpointed region
// (NOTE [Activation checkpointing] in backend/model: the Perceiver, each gated
// cross-attention block, each decoder layer), i.e. under no-grad.
bool insideCheckpointedRegion(const std::string& path) {
  if (path == "perceiver" || path.rfind("perceiver.", 0) == 0) return true;
  return hasSegment(path, "gated_cross_attn_layer") || hasSegment(path, "decoder_layer");
}

// NOTE [Step walk]: the activations a unit keeps, works with and recomputes, from its path (the model's
// regions: the vision tower, the Perceiver or its layers, gated blocks, decoder layers). A unit spanning
// several regions or none gets nothing; what no unit claims is kept from the start (rootKept). An untied
// output head's unit computes the head: the product and its scatter in forward, the logits gradient in
// backward (a tied head is the embedding's unit, gathered again at the head: WalkUnit::tied).
void assignActivations(const Unit& unit, bool lastVision, bool checkpointing, const ActivationRegions& a,
                       WalkUnit& u) {
  const std::string& path = unit.path;
  const auto region = [&](int64_t full, int64_t backward) {
    u.kept = checkpointing ? a.regionInput : full;
    u.recompute = checkpointing ? full : 0;
    u.backwardWorking = backward;
  };
  if (unit.moduleType == "OutputHead") {
    u.working = a.headInUnitForward;
    u.backwardWorking = a.headInUnitBackward;
  } else if (path == "vision_encoder" || path.rfind("vision_encoder.", 0) == 0) {
    u.working = a.visionWorkingSet;
    if (lastVision) u.kept = a.features;  // the tower's output, kept once it is done
  } else if (path == "perceiver") {
    u.kept = checkpointing ? 0 : a.perceiver;  // its input is the features, kept already
    u.recompute = checkpointing ? a.perceiver : 0;
    u.backwardWorking = a.perceiverBackward;
  } else if (path.rfind("perceiver.layers.", 0) == 0) {
    u.kept = checkpointing ? 0 : a.perceiverLayer;
    u.recompute = checkpointing ? a.perceiver : 0;  // the whole Perceiver is one checkpointed region
    u.backwardWorking = a.perceiverBackward;
  } else if (hasSegment(path, "gated_cross_attn_layer") != hasSegment(path, "decoder_layer")) {
    if (hasSegment(path, "decoder_layer")) {
      region(a.decoderLayer, a.decoderLayerBackward);
    } else {
      region(a.gatedBlock, a.gatedBlockBackward);
    }
  }
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

int64_t loaderBytes(const protocol::RunConfig& config, const ActivationEstimate& activations) {
  if (config.data.source == "synthetic") return 0;
  const int64_t prefetch = std::max<int64_t>(1, config.data.prefetch_batches);
  const int64_t side = config.model.vision.image_size;
  int64_t bytes = 0;
  for (size_t i = 0; i < activations.datasets.size() && i < config.data.datasets.size(); ++i) {
    const auto& a = activations.datasets[i];
    const int64_t workers = std::max<int64_t>(1, config.data.datasets[i].workers);
    const int64_t images = a.batch * a.images * 3 * side * side * 4;  // float32, as ActivationRegions::inputs
    const int64_t idsAndMask = 2 * a.batch * a.tokens * 8;            // int64
    bytes += images * (workers * (prefetch + 3) - 1) + idsAndMask * workers * (prefetch + 1);
  }
  return bytes;
}

RankMemory estimateRankMemory(const Layout& layout, const ShardPlan& shards, const PrecisionPlan& precision,
                              const protocol::RunConfig& config, const ActivationEstimate& activations) {
  RankMemory r;
  r.loader = loaderBytes(config, activations);
  for (const auto& u : shards.units) {
    for (const auto& g : u.groups) {
      r.parameters += g.shardBytes();
      if (g.gradients) r.gradients += g.shardNumel * dtypeBytes(precision.weight);
      if (g.trainable) r.optimizer += 2 * g.shardNumel * dtypeBytes(precision.weight);
    }
  }
  // NOTE [Replicated modes]: DDP's buckets are a second copy of the gradients.
  if (shards.strategy == Strategy::kDdp && shards.topology.world > 1) {
    for (const auto& u : shards.units) {
      for (const auto& g : u.groups) {
        if (g.gradients) r.gradients += g.shardNumel * dtypeBytes(precision.weight);
      }
    }
  }

  // Gathered peak over the non-root units in gather order.
  const int64_t s = shards.shardSize;
  // NOTE [Transport buffers]: Gloo's list all-gather stages a flat copy of its output, and our reduce-scatter
  // over Gloo receives every rank's chunks into a buffer as large as the flat gradient. The shared-memory
  // transport (backend/distributed/shm_communicator.h) needs neither, for messages up to half its arena; it
  // carries a group only when every member is on one node. With node-shared shards
  // (backend/distributed/shared_shards.h) a gather is a copy out of the node's segment whatever its size, and
  // nothing is prefetched: there is no transfer to overlap, only a copy that would hold memory early.
  const bool gloo = s > 1 && !protocol::deviceGroupIsNccl(config.parallel);
  const bool shmGroup = gloo && config.parallel.intra_node_transport == "shm" &&
                        (shards.topology.nodes == 1 || shards.strategy == Strategy::kHybridShard);
  const bool sharedShards = shmGroup && config.parallel.shared_shards;
  int64_t root = 0, rootGradient = 0;
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
      rootGradient = unitGradientBytes(shards.units[i], s, precision);
      root += rootGradient;
      continue;
    }
    gathered.push_back(g);
    grads.push_back(unitGradientBytes(shards.units[i], s, precision));
    backwardUnits.push_back(layout.units[i].inBackward ? 1 : 0);
    held.push_back(
        backwardUnits.back() && !(checkpointing && insideCheckpointedRegion(layout.units[i].path)) ? 1 : 0);
    tied.push_back(layout.units[i].aliases.empty() ? 0 : 1);
    if (tied.back()) {
      tiedGathered += gathered.back();
      tiedGrad += grads.back();
    }
  }
  const auto fwdK = static_cast<size_t>(sharedShards ? 1 : forwardWindow(config.parallel));
  const auto bwdK = static_cast<size_t>(sharedShards ? 1 : backwardWindow(config.parallel));
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

  // NOTE [Step walk]: one walk per dataset's micro-batch, the same units and windows.
  WalkModel walk;
  walk.root = root - rootGradient;
  walk.rootGradient = rootGradient;
  walk.forwardWindow = static_cast<int64_t>(fwdK);
  walk.backwardWindow = static_cast<int64_t>(bwdK);
  const int64_t shmLimit = (std::max<int64_t>(1, config.parallel.shm_arena_mib) << 20) / 2;
  auto viaShm = [&](const UnitShards& unit, bool gradient) {
    if (!shmGroup) return false;
    if (!gradient && sharedShards) return true;
    for (const auto& g : unit.groups) {
      if (gradient && !g.gradients) continue;
      // What each rank copies into its arena: its shard for a gather, the whole flat gradient for a
      // reduction.
      const int64_t published = gradient ? g.paddedNumel(s) * dtypeBytes(precision.reduce)
                                         : g.shardNumel * dtypeBytes(precision.param);
      if (published > shmLimit) return false;
    }
    return true;
  };
  size_t lastVision = layout.units.size();
  for (size_t i = 0; i < layout.units.size(); ++i) {
    const auto& p = layout.units[i].path;
    if (p == "vision_encoder" || p.rfind("vision_encoder.", 0) == 0) lastVision = i;
  }
  // The units' gathers and gradients are the same for every micro-batch; only their activations differ.
  std::vector<WalkUnit> units;
  std::vector<size_t> unitIndex;  // each walk unit's index in layout.units
  for (size_t i = 0, k = 0; i < layout.units.size(); ++i) {
    if (layout.units[i].path.empty()) continue;
    WalkUnit u;
    u.gathered = gathered[k];
    u.gradient = grads[k];
    u.inBackward = backwardUnits[k] != 0;
    u.held = sgo && held[k] != 0;
    u.tied = tied[k] != 0;
    u.staged = gloo && !viaShm(shards.units[i], false);
    // Over shared memory the flat gradient is copied into the arena as the reduce-scatter is issued and
    // dropped (distributed::PendingCollective::inputCopied).
    u.reduceCopies = !gloo ? 1 : viaShm(shards.units[i], true) ? 0 : 2;
    units.push_back(u);
    unitIndex.push_back(i);
    ++k;
  }
  r.unitPeaks.assign(layout.units.size(), UnitPeak{});
  for (const auto& ds : activations.datasets) {
    r.inputs += ds.paths.front().inputs;
    for (const auto& a : ds.paths) {  // NOTE [Activation formula], two paths: each may come
      walk.units = units;
      int64_t assigned = 0;
      for (size_t j = 0; j < units.size(); ++j) {
        const size_t i = unitIndex[j];
        assignActivations(layout.units[i], i == lastVision, checkpointing, a, walk.units[j]);
        assigned += walk.units[j].kept;
      }
      walk.bias = a.bias;
      walk.headForward = a.headForward;
      walk.headBackward = a.headBackward;
      walk.headInUnitForward = a.headInUnitForward;
      walk.headInUnitBackward = a.headInUnitBackward;
      walk.rootKept = std::max<int64_t>(
          0, (checkpointing ? a.keptWithCheckpointing : a.keptWithoutCheckpointing) - assigned);
      for (const auto& moment : walkMoments(walk)) {
        const int unit = moment.unit < 0 ? -1 : static_cast<int>(unitIndex[static_cast<size_t>(moment.unit)]);
        if (moment.bytes > r.stepPeak || (r.stepPeak == 0 && r.stepPeakUnit < 0)) {
          r.stepPeak = moment.bytes;
          r.stepPeakUnit = unit;
          r.stepPeakPhase = moment.phase;
        }
        if (unit >= 0 && moment.bytes > r.unitPeaks[static_cast<size_t>(unit)].bytes)
          r.unitPeaks[static_cast<size_t>(unit)] = {moment.bytes, moment.phase};
      }
    }
  }
  for (size_t i = 0; i < layout.units.size(); ++i) {
    if (layout.units[i].path.empty()) r.unitPeaks[i] = {r.stepPeak, r.stepPeakPhase};
  }

  r.activationsWithoutCheckpointing = activations.withoutCheckpointing;
  r.activationsWithCheckpointing = activations.withCheckpointing;
  r.activations =
      config.model.gradient_checkpointing ? activations.withCheckpointing : activations.withoutCheckpointing;
  return r;
}

}  // namespace fs::fsdp_plan
