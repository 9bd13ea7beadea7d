#include "backend/step/optimizer.h"

#include <torch/torch.h>

#include <cmath>

namespace fs::step {
namespace {
// LibTorch's AdamW keys its per-parameter state by the parameter's TensorImpl.
void* stateKey(const torch::Tensor& p) {
  return p.unsafeGetTensorImpl();
}

std::string shapeString(torch::IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}
}  // namespace

bool decaysWeight(const std::string& name) {
  return name.find("gated_cross_attn") != std::string::npos;
}

std::vector<ParamGroup> groupParameters(const std::vector<NamedParameter>& params, double weightDecay) {
  std::vector<ParamGroup> groups(2);
  groups[0].weightDecay = weightDecay;
  groups[1].weightDecay = 0.0;
  for (const auto& p : params) {
    if (!p.tensor.requires_grad()) continue;
    auto& g = groups[p.decays.value_or(decaysWeight(p.name)) ? 0 : 1];
    g.names.push_back(p.name);
    g.params.push_back(p.tensor);
  }
  return groups;
}

GroupedAdamW::GroupedAdamW(const std::vector<NamedParameter>& params, const protocol::OptimConfig& optim)
    : groups_(groupParameters(params, optim.weight_decay)) {
  const auto defaults = torch::optim::AdamWOptions(optim.lr)
                            .betas(std::make_tuple(optim.beta1, optim.beta2))
                            .eps(optim.eps)
                            .weight_decay(optim.weight_decay);
  std::vector<torch::optim::OptimizerParamGroup> pg;
  for (const auto& g : groups_) {
    auto& masters = masters_.emplace_back(g.params.size());
    std::vector<torch::Tensor> stepped;
    for (size_t k = 0; k < g.params.size(); ++k) {
      if (g.params[k].scalar_type() == torch::kHalf)
        masters[k] = g.params[k].detach().to(torch::kFloat).clone();
      stepped.push_back(masters[k].defined() ? masters[k] : g.params[k]);
    }
    auto options = std::make_unique<torch::optim::AdamWOptions>(defaults);
    options->weight_decay(g.weightDecay);
    pg.emplace_back(std::move(stepped), std::move(options));
  }
  adamw_ = std::make_unique<torch::optim::AdamW>(std::move(pg), defaults);
}

void GroupedAdamW::step() {
  if (!mastersFresh_) refreshMasters();
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    for (size_t k = 0; k < groups_[gi].params.size(); ++k) {
      auto& m = masters_[gi][k];
      if (!m.defined()) continue;
      const auto& g = groups_[gi].params[k].grad();
      m.mutable_grad() = g.defined() ? g.detach().to(torch::kFloat) : torch::Tensor();
    }
  }
  stepAsTorchOptim();
  torch::NoGradGuard noGrad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    for (size_t k = 0; k < groups_[gi].params.size(); ++k) {
      auto& m = masters_[gi][k];
      if (!m.defined() || !m.grad().defined()) continue;  // not stepped: unchanged
      groups_[gi].params[k].copy_(m);
      m.mutable_grad() = torch::Tensor();
    }
  }
}

// NOTE [AdamW] in optimizer.h: Python's single-tensor step, line for line, with the state kept in
// LibTorch's AdamWParamState (so the state_dict code reads it as before).
void GroupedAdamW::stepAsTorchOptim() {
  torch::NoGradGuard noGrad;
  auto& state = adamw_->state();
  for (auto& group : adamw_->param_groups()) {
    const auto& opt = static_cast<const torch::optim::AdamWOptions&>(group.options());
    const double lr = opt.lr(), weightDecay = opt.weight_decay(), eps = opt.eps();
    const double beta1 = std::get<0>(opt.betas()), beta2 = std::get<1>(opt.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;  // no gradient: no decay, no moment update
      const torch::Tensor grad = p.grad();
      auto it = state.find(stateKey(p));
      if (it == state.end()) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        it = state.emplace(stateKey(p), std::move(fresh)).first;
      }
      auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
      s.step(s.step() + 1);
      if (weightDecay != 0) p.mul_(1 - lr * weightDecay);
      s.exp_avg().lerp_(grad, 1 - beta1);
      s.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      const double step = static_cast<double>(s.step());
      const double biasCorrection1 = 1 - std::pow(beta1, step);
      const double biasCorrection2 = 1 - std::pow(beta2, step);
      const double stepSize = lr / biasCorrection1;
      const double biasCorrection2Sqrt = std::pow(biasCorrection2, 0.5);
      const torch::Tensor denom = (s.exp_avg_sq().sqrt() / biasCorrection2Sqrt).add_(eps);
      p.addcdiv_(s.exp_avg(), denom, -stepSize);
    }
  }
}

void GroupedAdamW::refreshMasters() {
  torch::NoGradGuard noGrad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    for (size_t k = 0; k < groups_[gi].params.size(); ++k) {
      if (masters_[gi][k].defined()) masters_[gi][k].copy_(groups_[gi].params[k]);
    }
  }
  mastersFresh_ = true;
}

std::vector<torch::Tensor> GroupedAdamW::parameters() const {
  std::vector<torch::Tensor> all;
  for (const auto& g : groups_) all.insert(all.end(), g.params.begin(), g.params.end());
  return all;
}

void GroupedAdamW::zeroGrad(bool setToNone) {
  for (const auto& g : groups_) {
    for (const auto& p : g.params) {
      if (!p.grad().defined()) continue;
      if (setToNone) {
        p.mutable_grad() = torch::Tensor();
      } else {
        p.mutable_grad().detach_();
        p.mutable_grad().zero_();
      }
    }
  }
}

int64_t GroupedAdamW::stateBytes() const {
  int64_t n = 0;
  auto bytes = [](const torch::Tensor& t) {
    return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
  };
  for (const auto& [key, state] : adamw_->state()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*state);
    n += bytes(s.exp_avg()) + bytes(s.exp_avg_sq()) + bytes(s.max_exp_avg_sq());
  }
  return n;
}

OptimizerStateDict GroupedAdamW::stateDict(const std::vector<double>& initialLrs) const {
  OptimizerStateDict out;
  const auto& state = adamw_->state();
  int64_t index = 0;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const auto& g = groups_[gi];
    const auto& opt = static_cast<const torch::optim::AdamWOptions&>(adamw_->param_groups()[gi].options());
    AdamWGroupStateDict gs;
    gs.weightDecay = opt.weight_decay();
    gs.lr = opt.lr();
    gs.beta1 = std::get<0>(opt.betas());
    gs.beta2 = std::get<1>(opt.betas());
    gs.eps = opt.eps();
    gs.amsgrad = opt.amsgrad();
    if (gi < initialLrs.size()) gs.initialLr = initialLrs[gi];
    for (size_t k = 0; k < g.params.size(); ++k, ++index) {
      gs.params.push_back(index);
      gs.paramNames.push_back(g.names[k]);
      const auto it = state.find(stateKey(stepped(gi, k)));
      if (it == state.end()) continue;
      const auto& ps = static_cast<const torch::optim::AdamWParamState&>(*it->second);
      out.state.push_back(AdamWParamStateDict{index, g.names[k],
                                              torch::tensor(static_cast<float>(ps.step()), torch::kFloat32),
                                              ps.exp_avg(), ps.exp_avg_sq()});
    }
    out.paramGroups.push_back(std::move(gs));
  }
  return out;
}

protocol::Status GroupedAdamW::loadStateDict(const OptimizerStateDict& sd) {
  using protocol::Status;
  if (sd.paramGroups.size() != groups_.size()) {
    return Status::invalidArgument("optimizer state: " + std::to_string(sd.paramGroups.size()) +
                                   " param groups saved, expected " + std::to_string(groups_.size()));
  }
  std::vector<const torch::Tensor*> flat;
  std::vector<const std::string*> names;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const auto& g = groups_[gi];
    const auto& saved = sd.paramGroups[gi];
    if (saved.params.size() != g.params.size()) {
      return Status::invalidArgument("optimizer state: group " + std::to_string(gi) + " holds " +
                                     std::to_string(saved.params.size()) + " parameters, this model has " +
                                     std::to_string(g.params.size()) + " (wrong model or freezing?)");
    }
    for (size_t k = 0; k < g.params.size(); ++k) {
      flat.push_back(&stepped(gi, k));
      names.push_back(&g.names[k]);
    }
  }
  for (const auto& e : sd.state) {
    if (e.index < 0 || e.index >= static_cast<int64_t>(flat.size())) {
      return Status::invalidArgument("optimizer state: entry " + std::to_string(e.index) +
                                     " has no parameter");
    }
    const auto& p = *flat[static_cast<size_t>(e.index)];
    for (const auto* t : {&e.expAvg, &e.expAvgSq}) {
      if (!t->defined() || t->sizes() != p.sizes()) {
        return Status::invalidArgument("optimizer state of '" + *names[static_cast<size_t>(e.index)] +
                                       "': moment shape " +
                                       (t->defined() ? shapeString(t->sizes()) : "none") +
                                       ", parameter shape " + shapeString(p.sizes()));
      }
    }
    if (!e.step.defined() || e.step.numel() != 1) {
      return Status::invalidArgument("optimizer state of '" + *names[static_cast<size_t>(e.index)] +
                                     "': step is not a scalar");
    }
  }

  auto& state = adamw_->state();
  for (const auto* p : flat) state.erase(stateKey(*p));
  for (const auto& e : sd.state) {
    const auto& p = *flat[static_cast<size_t>(e.index)];
    auto ps = std::make_unique<torch::optim::AdamWParamState>();
    ps->step(static_cast<int64_t>(std::llround(e.step.item<double>())));
    ps->exp_avg(e.expAvg.detach().to(p.device(), p.scalar_type()).clone());
    ps->exp_avg_sq(e.expAvgSq.detach().to(p.device(), p.scalar_type()).clone());
    state[stateKey(p)] = std::move(ps);
  }
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const auto& saved = sd.paramGroups[gi];
    auto& opt = static_cast<torch::optim::AdamWOptions&>(adamw_->param_groups()[gi].options());
    opt.lr(saved.lr)
        .betas(std::make_tuple(saved.beta1, saved.beta2))
        .eps(saved.eps)
        .weight_decay(saved.weightDecay);
    opt.amsgrad(saved.amsgrad);
  }
  mastersFresh_ = false;  // the model's weights were loaded before this (or will be before the next step)
  return Status::ok();
}

}  // namespace fs::step
