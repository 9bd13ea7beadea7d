#include "backend/step/grad_scaler.h"

#include <torch/torch.h>

#include <cmath>

namespace fs::step {

GradScaler::GradScaler(const GradScalerOptions& options)
    : options_(options), scale_(static_cast<float>(options.initScale)) {}

torch::Tensor GradScaler::scale(const torch::Tensor& loss) const {
  if (!options_.enabled) return loss;
  return loss * torch::tensor(scale_, loss.options().dtype(torch::kFloat32));
}

bool GradScaler::unscale(const std::vector<torch::Tensor>& params) {
  if (!options_.enabled) return false;
  TORCH_CHECK(!unscaled_, "GradScaler: unscale() already called since the last update()");
  torch::NoGradGuard noGrad;
  const auto inv = static_cast<float>(1.0 / static_cast<double>(scale_));
  bool found = false;
  for (const auto& p : params) {
    const auto& g = p.grad();
    if (!g.defined()) continue;
    if (!found && !torch::isfinite(g).all().item<bool>()) found = true;
    g.mul_(torch::tensor(inv, g.options().dtype(torch::kFloat32)));
  }
  unscaled_ = true;
  foundInf_ = found;
  return found;
}

bool GradScaler::step(const std::vector<torch::Tensor>& params, const std::function<void()>& optimizerStep) {
  if (!options_.enabled) {
    optimizerStep();
    return true;
  }
  if (!unscaled_) unscale(params);
  if (foundInf_) return false;
  optimizerStep();
  return true;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  if (foundInf_) {
    scale_ = static_cast<float>(scale_ * options_.backoffFactor);
    tracker_ = 0;
  } else {
    const int64_t successful = tracker_ + 1;
    if (successful == options_.growthInterval) {
      const auto grown = static_cast<float>(scale_ * options_.growthFactor);
      if (std::isfinite(grown)) scale_ = grown;
      tracker_ = 0;
    } else {
      tracker_ = successful;
    }
  }
  unscaled_ = false;
  foundInf_ = false;
}

void GradScaler::unscaleWithoutCheck(const std::vector<torch::Tensor>& params) {
  if (!options_.enabled) return;
  TORCH_CHECK(!unscaled_, "GradScaler: unscale() already called since the last update()");
  torch::NoGradGuard noGrad;
  const auto inv = static_cast<float>(1.0 / static_cast<double>(scale_));
  for (const auto& p : params) {
    const auto& g = p.grad();
    if (g.defined()) g.mul_(inv);
  }
  unscaled_ = true;
}

void GradScaler::update(bool foundNonFinite) {
  foundInf_ = foundNonFinite;
  update();
}

GradScalerState GradScaler::state() const {
  return GradScalerState{scale_, options_.growthFactor, options_.backoffFactor, options_.growthInterval,
                         tracker_};
}

void GradScaler::load(const GradScalerState& s) {
  scale_ = static_cast<float>(s.scale);
  options_.growthFactor = s.growthFactor;
  options_.backoffFactor = s.backoffFactor;
  options_.growthInterval = s.growthInterval;
  tracker_ = s.growthTracker;
  unscaled_ = foundInf_ = false;
}

}  // namespace fs::step
