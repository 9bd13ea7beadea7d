#include "backend/step/grad_clip.h"

#include <torch/torch.h>

#include <cmath>

namespace fs::step {
namespace {
std::vector<torch::Tensor> gradsOf(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  return grads;
}

torch::Tensor totalNorm(const std::vector<torch::Tensor>& grads) {
  std::vector<torch::Tensor> norms;
  norms.reserve(grads.size());
  const auto device = grads.front().device();
  for (const auto& g : grads) {
    auto n = g.scalar_type() == torch::kFloat32
                 ? torch::linalg_vector_norm(g.detach(), 2)
                 : torch::linalg_vector_norm(g.detach(), 2, c10::nullopt, false, torch::kFloat32);
    norms.push_back(n.to(device));
  }
  return torch::linalg_vector_norm(torch::stack(norms), 2);
}
}  // namespace

double globalGradNorm(const std::vector<torch::Tensor>& params) {
  const auto grads = gradsOf(params);
  if (grads.empty()) return 0.0;
  torch::NoGradGuard noGrad;
  return totalNorm(grads).item<double>();
}

ClipResult clipGradNorm(const std::vector<torch::Tensor>& params, const ClipOptions& options) {
  ClipResult r;
  const auto grads = gradsOf(params);
  if (grads.empty()) return r;
  torch::NoGradGuard noGrad;
  const auto total = totalNorm(grads);
  r.norm = total.item<double>();
  r.finite = std::isfinite(r.norm);
  if (options.maxNorm <= 0) return r;
  if (!r.finite && !options.referenceNonFinite) return r;
  const auto coef = torch::clamp(options.maxNorm / (total + 1e-6), c10::nullopt, 1.0);
  r.coef = coef.item<double>();
  r.clipped = r.coef < 1.0;
  for (const auto& g : grads) g.detach().mul_(coef.to(g.device()));
  return r;
}

}  // namespace fs::step
