#include "backend/fsdp/sharded_clip.h"

#include <cmath>

namespace fs::fsdp {

namespace {
step::ClipResult coefficientFor(double sumOfSquares, double maxNorm) {
  step::ClipResult r;
  r.norm = std::sqrt(sumOfSquares);
  r.finite = std::isfinite(r.norm);
  if (!r.finite || maxNorm <= 0) return r;
  r.coef = std::min(1.0, maxNorm / (r.norm + 1e-6));
  r.clipped = r.coef < 1.0;
  return r;
}
}  // namespace

ShardedClipResult clipShardedGradNorm(const ShardedModel& model, const step::ClipOptions& options,
                                      ClipScope scope) {
  distributed::Communicator& shardGroup = model.shardGroup();
  // Per unit with trainable shards: the local sum of squares of its shard gradients (one tensor each, read
  // back once after the all-reduce).
  std::vector<std::vector<torch::Tensor>> grads;
  std::vector<torch::Tensor> local;
  for (const auto& u : model.units()) {
    std::vector<torch::Tensor> unitGrads;
    torch::Tensor sum = torch::zeros({}, torch::kFloat64);
    for (const auto& f : u.flats) {
      if (!f->trainable() || !f->shard().grad().defined()) continue;
      const torch::Tensor g = f->shard().grad();
      sum = sum + g.to(torch::kFloat64).pow(2).sum();
      unitGrads.push_back(g);
    }
    if (unitGrads.empty()) continue;
    grads.push_back(std::move(unitGrads));
    local.push_back(sum);
  }
  ShardedClipResult out;
  if (grads.empty()) return out;
  torch::Tensor sums = torch::stack(local);
  // Offloaded shards (NOTE [CPU offload]) sum in host memory; the collective runs on the model's device.
  if (sums.device() != model.computeDevice()) sums = sums.to(model.computeDevice());
  if (shardGroup.size() > 1) shardGroup.allReduce(sums, distributed::ReduceOp::kSum, "gradient norm");
  sums = sums.to(torch::kCPU);
  const auto v = sums.accessor<double, 1>();
  double total = 0;
  for (int64_t i = 0; i < v.size(0); ++i) total += v[i];
  out.total = coefficientFor(total, options.maxNorm);
  if (!out.total.finite) return out;
  torch::NoGradGuard noGrad;
  if (scope == ClipScope::kGlobal) {
    if (options.maxNorm > 0) {
      for (auto& unitGrads : grads) {
        for (auto& g : unitGrads) g.mul_(out.total.coef);
      }
    }
    return out;
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    out.units.push_back(coefficientFor(v[static_cast<int64_t>(i)], options.maxNorm));
    if (options.maxNorm <= 0) continue;
    for (auto& g : grads[i]) g.mul_(out.units.back().coef);
  }
  out.total.coef = 1;
  out.total.clipped = false;
  return out;
}

}  // namespace fs::fsdp
