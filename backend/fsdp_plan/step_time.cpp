#include "backend/fsdp_plan/step_time.h"

#include <algorithm>

namespace fs::fsdp_plan {
namespace {

// Tokens a parameter's matmul runs over per sample (NOTE [Step-time model]); 0 = no matmul.
double tokensFor(const ParamInfo& p, const protocol::ModelConfig& model, int64_t L, int64_t T) {
  if (p.blockType == "Embedding") return 0;
  if (p.shape.size() < 2) return 0;  // biases, norms: no matmul
  if (p.blockType == "VisionTransformer") {
    const int64_t side = model.vision.patch_size > 0 ? model.vision.image_size / model.vision.patch_size : 0;
    return double(T) * double(side * side + 1);
  }
  if (p.blockType == "PerceiverResampler") return double(T) * double(model.perceiver.num_latents);
  return double(L);
}

bool checkpointed(const ParamInfo& p) {
  return p.blockType == "PerceiverResampler" || p.blockType == "GatedCrossAttentionBlock" ||
         p.blockType == "DecoderLayer";
}

}  // namespace

StepFlops stepFlops(const ParamInventory& inventory, const protocol::RunConfig& config) {
  StepFlops f;
  const ActivationEstimate shapes = estimateActivations(config, Dtype::kFloat32);
  const int64_t accum = std::max<int64_t>(1, config.optim.grad_accum_steps);
  const auto& lm = config.model.lm;
  for (const auto& d : shapes.datasets) {
    const double samples = double(d.batch) * double(accum);
    double fwd = 0, bwd = 0, again = 0;
    for (const auto& p : inventory.params) {
      double tokens = tokensFor(p, config.model, d.tokens, d.images);
      // A tied head's weight is the embedding's: count its matmul once, at the head.
      if (p.blockType == "Embedding" && p.tiedGroup >= 0) tokens = double(d.tokens);
      const double pass = 2.0 * double(p.numel) * tokens;
      fwd += pass;
      if (p.blockType != "VisionTransformer") bwd += pass + (p.trainable ? pass : 0.0);
      if (checkpointed(p)) again += pass;
    }
    const double scores = 4.0 * double(d.tokens) * double(d.tokens) * double(lm.width) * double(lm.layers);
    fwd += scores;
    bwd += 2 * scores;
    again += scores;
    f.forward += fwd * samples;
    f.backward += bwd * samples;
    if (config.model.gradient_checkpointing) f.recompute += again * samples;
  }
  return f;
}

StepTime estimateStepTime(const Plan& plan, const PlanEntry& entry, const PrecisionPlan& precision,
                          const protocol::RunConfig& config, const Cluster& cluster) {
  StepTime t;
  t.flops = stepFlops(plan.inventory, config);
  const bool half = precision.compute != Dtype::kFloat32;
  const double flops_per_s =
      (half ? cluster.peakTflops16 : cluster.peakTflopsFp32) * 1e12 * cluster.efficiency;
  t.computeS = (t.flops.forward + t.flops.backward) / flops_per_s;
  t.recomputeS = t.flops.recompute / flops_per_s;
  const double backward_s = t.flops.backward / flops_per_s;

  const Layout& layout = plan.layouts[entry.layout];
  const int64_t s = entry.shards.shardSize;
  int64_t gathered = 0, grads = 0, shard_params = 0, shard_grads = 0;
  for (const auto& unit : entry.shards.units) {
    for (const auto& g : unit.groups) {
      gathered += g.paddedNumel(s) * dtypeBytes(precision.param);
      shard_params += g.shardBytes();
      if (g.gradients) {
        grads += g.paddedNumel(s) * dtypeBytes(precision.reduce);
        shard_grads += g.shardNumel * dtypeBytes(precision.reduce);
      }
    }
  }
  if (isReplicated(entry.strategy)) {
    gathered = 0;
    grads = 0;
    for (const auto& p : plan.inventory.params)
      if (p.trainable) grads += p.numel * dtypeBytes(precision.weight);
  }
  const int64_t accum = std::max<int64_t>(1, config.optim.grad_accum_steps);
  const int64_t world = cluster.world();
  const double intra = cluster.intraNodeGBs * 1e9;
  const double spanning = std::min(intra, cluster.interNodeGBs * 1e9);
  auto ring = [](int64_t bytes, int64_t ranks) {
    return ranks <= 1 ? 0.0 : double(bytes) * double(ranks - 1) / double(ranks);
  };
  double bytes_intra = 0, bytes_span = 0;  // per micro-batch
  const bool spans = cluster.nodes > 1;
  int gathers = 0;
  switch (entry.strategy) {
    case Strategy::kFullShard:
    case Strategy::kShardGradOp: {
      gathers = entry.strategy == Strategy::kFullShard ? 2 : 1;
      const double b = gathers * ring(gathered, s) + ring(grads, s);
      (spans ? bytes_span : bytes_intra) += b;
      break;
    }
    case Strategy::kHybridShard:
      gathers = 2;
      bytes_intra += 2 * ring(gathered, s) + ring(grads, s);
      bytes_span += 2 * ring(shard_grads, cluster.nodes);
      break;
    case Strategy::kNoShard:
    case Strategy::kDdp:
      (spans ? bytes_span : bytes_intra) += 2 * ring(grads, world);
      break;
    case Strategy::kSingle:
      break;
  }
  t.commBytes = static_cast<int64_t>((bytes_intra + bytes_span) * double(accum));
  t.commS = double(accum) * (bytes_intra / intra + (bytes_span > 0 ? bytes_span / spanning : 0.0));
  const double compute = t.computeS + t.recomputeS;
  const auto& par = config.parallel;
  if (entry.strategy == Strategy::kDdp) {
    t.exposedCommS = std::max(0.0, t.commS - backward_s);
  } else if (!isReplicated(entry.strategy) && (par.forward_prefetch || par.backward_prefetch != "none")) {
    const double units = double(std::max<size_t>(1, layout.units.size()));
    t.exposedCommS = std::max(t.commS - compute, t.commS / units);
  } else {
    t.exposedCommS = t.commS;
  }
  if (par.cpu_offload && !isReplicated(entry.strategy)) {
    const double host = cluster.hostGBs * 1e9;
    t.offloadS = double(accum) * (double(gathers) * double(shard_params) + double(shard_grads)) / host;
  }
  return t;
}

}  // namespace fs::fsdp_plan
