#include "backend/step/optimizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "tests/backend/step/python_oracle.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::step {
namespace {

protocol::OptimConfig optimConfig(double lr = 1e-3, double wd = 0.1) {
  protocol::OptimConfig o;
  o.lr = lr;
  o.weight_decay = wd;
  o.beta1 = 0.9;
  o.beta2 = 0.999;
  o.eps = 1e-8;
  return o;
}

torch::Tensor param(std::vector<int64_t> shape, bool trainable = true) {
  return torch::randn(shape).set_requires_grad(trainable);
}

TEST(WeightDecay, ByNameAsTheReleasedReference) {
  // Everything inside a gated cross-attention block decays, gates and norms included.
  EXPECT_TRUE(decaysWeight("lang_encoder.model.decoder.layers.0.gated_cross_attn_layer.attn_gate"));
  EXPECT_TRUE(decaysWeight("lang_encoder.model.decoder.layers.0.gated_cross_attn_layer.ff_gate"));
  EXPECT_TRUE(decaysWeight("lang_encoder.model.decoder.layers.3.gated_cross_attn_layer.attn.norm.weight"));
  EXPECT_TRUE(decaysWeight("lang_encoder.model.decoder.layers.3.gated_cross_attn_layer.ff.0.bias"));
  EXPECT_TRUE(decaysWeight("lang_encoder.gated_cross_attn_layers.1.attn.to_q.weight"));
  EXPECT_FALSE(decaysWeight("perceiver.layers.0.0.to_q.weight"));
  EXPECT_FALSE(decaysWeight("perceiver.latents"));
  EXPECT_FALSE(decaysWeight("lang_encoder.model.decoder.embed_tokens.weight"));
  EXPECT_FALSE(decaysWeight("lang_encoder.transformer.wte.weight"));
}

TEST(WeightDecay, GroupsHoldOnlyTrainableParametersInOrder) {
  const std::vector<NamedParameter> named = {
      {"vision_encoder.conv1.weight", param({2, 2}, false)},
      {"perceiver.latents", param({2})},
      {"lang_encoder.model.decoder.layers.0.gated_cross_attn_layer.attn_gate", param({1})},
      {"lang_encoder.model.decoder.layers.0.decoder_layer.fc1.weight", param({2}, false)},
      {"lang_encoder.model.decoder.embed_tokens.weight", param({4, 2})},
      {"lang_encoder.model.decoder.layers.1.gated_cross_attn_layer.ff.1.weight", param({3})},
  };
  const auto groups = groupParameters(named, 0.1);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].weightDecay, 0.1);
  EXPECT_EQ(groups[1].weightDecay, 0.0);
  EXPECT_EQ(groups[0].names, (std::vector<std::string>{named[2].name, named[5].name}));
  EXPECT_EQ(groups[1].names, (std::vector<std::string>{named[1].name, named[4].name}));
  EXPECT_TRUE(groups[0].params[1].is_same(named[5].tensor));

  GroupedAdamW opt(named, optimConfig());
  EXPECT_EQ(opt.parameters().size(), 4u);
  EXPECT_EQ(opt.adamw().param_groups().size(), 2u);
  EXPECT_EQ(static_cast<torch::optim::AdamWOptions&>(opt.adamw().param_groups()[0].options()).weight_decay(),
            0.1);
  EXPECT_EQ(static_cast<torch::optim::AdamWOptions&>(opt.adamw().param_groups()[1].options()).weight_decay(),
            0.0);
}

TEST(AdamW, OneStepAgainstHandMath) {
  auto p = torch::tensor({1.0, -2.0}, torch::kFloat64).set_requires_grad(true);
  GroupedAdamW opt({{"x.gated_cross_attn_layer.w", p}}, optimConfig(0.1, 0.1));
  p.mutable_grad() = torch::tensor({0.5, 0.25}, torch::kFloat64);
  opt.step();
  const double lr = 0.1, wd = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  for (int i = 0; i < 2; ++i) {
    const double p0 = i == 0 ? 1.0 : -2.0, g = i == 0 ? 0.5 : 0.25;
    const double decayed = p0 * (1 - lr * wd);
    const double m = (1 - b1) * g, v = (1 - b2) * g * g;
    const double mhat = m / (1 - b1), vhat = v / (1 - b2);
    const double expected = decayed - lr * mhat / (std::sqrt(vhat) + eps);
    EXPECT_NEAR(p[i].item<double>(), expected, 1e-12) << i;
  }
  // Second step without a gradient: skipped entirely (no decay either).
  opt.zeroGrad();
  EXPECT_FALSE(p.grad().defined());
  const auto before = p.detach().clone();
  opt.step();
  EXPECT_TRUE(torch::equal(p.detach(), before));
}

// NOTE [Float32 master weights]: float16 parameters are stepped through
// float32 masters, exactly as float32 AdamW on the same values, then rounded.
TEST(AdamW, Float16ParametersStepThroughFloat32Masters) {
  torch::manual_seed(3);
  const auto start = torch::randn({64});
  auto half = start.to(torch::kHalf).set_requires_grad(true);
  auto ref = start.to(torch::kHalf).to(torch::kFloat).set_requires_grad(true);
  GroupedAdamW opt({{"a.gated_cross_attn_layer.w", half}}, optimConfig(1e-3, 0.1));
  GroupedAdamW refOpt({{"a.gated_cross_attn_layer.w", ref}}, optimConfig(1e-3, 0.1));
  for (int step = 0; step < 5; ++step) {
    // Some gradients exactly 0: float16 AdamW would divide 0 by 0 there (eps is 0 in float16).
    auto g = torch::randn({64}) * 1e-3;
    g.narrow(0, 0, 8).zero_();
    half.mutable_grad() = g.to(torch::kHalf);
    ref.mutable_grad() = g.to(torch::kHalf).to(torch::kFloat);
    opt.step();
    refOpt.step();
    ASSERT_TRUE(opt.master(0, 0).defined());
    EXPECT_TRUE(torch::equal(opt.master(0, 0), ref.detach())) << "step " << step;
    EXPECT_TRUE(torch::equal(half.detach(), ref.detach().to(torch::kHalf))) << "step " << step;
    EXPECT_TRUE(torch::isfinite(half).all().item<bool>());
  }
  // The moments are float32 and keyed like any parameter's.
  const auto sd = opt.stateDict();
  ASSERT_EQ(sd.state.size(), 1u);
  EXPECT_EQ(sd.state[0].expAvgSq.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(sd.state[0].expAvg, refOpt.stateDict().state[0].expAvg));
  // Weights loaded after the optimizer was built (resume) reach the master before the next step.
  {
    torch::NoGradGuard noGrad;
    half.fill_(0.5);
  }
  ASSERT_TRUE(opt.loadStateDict(sd).isOk());
  half.mutable_grad() = torch::zeros({64}, torch::kHalf);
  opt.step();
  // One step (lr 1e-3) from 0.5, not from the random values the master held.
  EXPECT_LT((opt.master(0, 0) - 0.5).abs().max().item<float>(), 2e-3);
  // Other dtypes have no master.
  auto f = param({2});
  GroupedAdamW plain({{"perceiver.latents", f}}, optimConfig());
  EXPECT_FALSE(plain.master(1, 0).defined());  // group 1: not decayed
}

TEST(AdamW, ZeroGradInPlaceKeepsZeroTensors) {
  auto p = param({3});
  GroupedAdamW opt({{"perceiver.latents", p}}, optimConfig());
  p.mutable_grad() = torch::ones({3});
  opt.zeroGrad(/*setToNone=*/false);
  ASSERT_TRUE(p.grad().defined());
  EXPECT_EQ(p.grad().abs().sum().item<float>(), 0.0f);
}

TEST(AdamW, StateDictLayoutAndReload) {
  torch::manual_seed(1);
  const std::vector<NamedParameter> named = {{"a.gated_cross_attn_layer.w", param({3, 2})},
                                             {"perceiver.latents", param({4})},
                                             {"b.gated_cross_attn_layer.g", param({1})},
                                             {"lang_encoder.embed_tokens.weight", param({5, 2})}};
  GroupedAdamW opt(named, optimConfig());
  auto grads = [&](int seed) {
    torch::manual_seed(seed);
    for (size_t i = 0; i < named.size(); ++i) {
      if (i == 3) continue;  // the embedding never gets a gradient here
      named[i].tensor.mutable_grad() = torch::randn(named[i].tensor.sizes());
    }
  };
  for (int s = 0; s < 3; ++s) {
    grads(10 + s);
    opt.step();
    opt.zeroGrad();
  }
  const OptimizerStateDict sd = opt.stateDict({1e-3, 1e-3});
  ASSERT_EQ(sd.paramGroups.size(), 2u);
  EXPECT_EQ(sd.paramGroups[0].params, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(sd.paramGroups[1].params, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(sd.paramGroups[0].paramNames[1], "b.gated_cross_attn_layer.g");
  EXPECT_EQ(sd.paramGroups[0].weightDecay, 0.1);
  EXPECT_EQ(sd.paramGroups[1].weightDecay, 0.0);
  EXPECT_EQ(sd.paramGroups[0].initialLr, 1e-3);
  ASSERT_EQ(sd.state.size(), 3u) << "no state for the parameter that never had a gradient";
  EXPECT_EQ(sd.state[2].index, 2);
  EXPECT_EQ(sd.state[2].name, "perceiver.latents");
  EXPECT_EQ(sd.state[0].step.scalar_type(), torch::kFloat32);
  EXPECT_EQ(sd.state[0].step.item<float>(), 3.0f);
  EXPECT_EQ(sd.state[0].expAvg.sizes(), (std::vector<int64_t>{3, 2}));

  // A fresh optimizer over copies, loaded from the state dict, continues identically.
  std::vector<NamedParameter> copies;
  for (const auto& n : named) copies.push_back({n.name, n.tensor.detach().clone().set_requires_grad(true)});
  GroupedAdamW resumed(copies, optimConfig(/*lr=*/5.0, /*wd=*/0.7));
  ASSERT_TRUE(resumed.loadStateDict(sd).isOk());
  grads(99);
  for (size_t i = 0; i < copies.size(); ++i) {
    if (named[i].tensor.grad().defined()) copies[i].tensor.mutable_grad() = named[i].tensor.grad().clone();
  }
  opt.step();
  resumed.step();
  for (size_t i = 0; i < copies.size(); ++i) {
    EXPECT_TRUE(torch::equal(named[i].tensor.detach(), copies[i].tensor.detach())) << named[i].name;
  }
}

TEST(AdamW, LoadStateDictRejectsMismatches) {
  const std::vector<NamedParameter> named = {{"a.gated_cross_attn_layer.w", param({3, 2})},
                                             {"perceiver.latents", param({4})}};
  GroupedAdamW opt(named, optimConfig());
  for (const auto& n : named) n.tensor.mutable_grad() = torch::ones(n.tensor.sizes());
  opt.step();
  OptimizerStateDict sd = opt.stateDict();
  auto badShape = sd;
  badShape.state[1].expAvg = torch::zeros({5});
  const auto st = opt.loadStateDict(badShape);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("perceiver.latents"), std::string::npos) << st.message();
  auto badGroups = sd;
  badGroups.paramGroups.pop_back();
  EXPECT_FALSE(opt.loadStateDict(badGroups).isOk());
  auto badCount = sd;
  badCount.paramGroups[1].params.push_back(7);
  EXPECT_FALSE(opt.loadStateDict(badCount).isOk());
  auto badIndex = sd;
  badIndex.state[0].index = 9;
  EXPECT_FALSE(opt.loadStateDict(badIndex).isOk());
  EXPECT_TRUE(opt.loadStateDict(sd).isOk());
}

// torch::optim::AdamW against Python's torch.optim.AdamW on the same tensors.
TEST(AdamW, MatchesPythonTorchOptimAdamW) {
  if (!fs::test::pythonTorchAvailable())
    FS_FIXTURE_UNAVAILABLE(std::string(FS_PYTHON) + " cannot import torch: run scripts/install-deps.sh");
  torch::manual_seed(5);
  const std::vector<NamedParameter> named = {{"x.gated_cross_attn_layer.a", param({4, 3})},
                                             {"x.gated_cross_attn_layer.b", param({5})},
                                             {"perceiver.c", param({2, 2})},
                                             {"lang_encoder.embed", param({6})}};
  std::vector<torch::Tensor> initial;
  for (const auto& n : named) initial.push_back(n.tensor.detach().clone());
  const int steps = 5;
  std::vector<std::vector<torch::Tensor>> grads(steps);
  for (int s = 0; s < steps; ++s) {
    for (size_t i = 0; i < named.size(); ++i) {
      const bool none = (s == 2 && i == 1) || (i == 3 && s < 3);
      grads[s].push_back(none ? torch::zeros({0}) : torch::randn(named[i].tensor.sizes()) * (1 + s));
    }
  }
  const double lr = 3e-3, wd = 0.1;
  GroupedAdamW opt(named, optimConfig(lr, wd));
  for (int s = 0; s < steps; ++s) {
    for (size_t i = 0; i < named.size(); ++i) {
      if (grads[s][i].numel() > 0) named[i].tensor.mutable_grad() = grads[s][i].clone();
    }
    opt.step();
    opt.zeroGrad();
  }

  c10::impl::GenericList gradList(c10::AnyType::get());
  for (const auto& g : grads) gradList.push_back(c10::List<torch::Tensor>(g));
  const fs::test::ScratchDir scratch("adamw");
  const std::string& dir = scratch.path;
  fs::test::saveForPython(
      c10::ivalue::Tuple::create({c10::List<torch::Tensor>({initial[0], initial[1]}),
                                  c10::List<torch::Tensor>({initial[2], initial[3]}), gradList,
                                  torch::tensor({lr, 0.9, 0.999, 1e-8, wd}, torch::kFloat64)}),
      dir + "/in.pt");
  ASSERT_TRUE(fs::test::runOracle("adamw_oracle.py", dir + "/in.pt", dir + "/out.pt"));
  const auto out = fs::test::loadFromPython(dir + "/out.pt").toList();
  const auto params = out.get(0).toList(), expAvg = out.get(1).toList(), expAvgSq = out.get(2).toList(),
             stepCounts = out.get(3).toList();
  const auto sd = opt.stateDict();
  for (size_t i = 0; i < named.size(); ++i) {
    EXPECT_TRUE(torch::equal(named[i].tensor.detach(), params.get(i).toTensor()))
        << named[i].name << " max diff "
        << (named[i].tensor.detach() - params.get(i).toTensor()).abs().max().item<double>();
    const auto it = std::find_if(sd.state.begin(), sd.state.end(), [&](const AdamWParamStateDict& e) {
      return e.index == static_cast<int64_t>(i);
    });
    ASSERT_NE(it, sd.state.end());
    EXPECT_TRUE(torch::equal(it->expAvg, expAvg.get(i).toTensor()))
        << named[i].name << " max diff "
        << (it->expAvg - expAvg.get(i).toTensor()).abs().max().item<double>();
    EXPECT_TRUE(torch::equal(it->expAvgSq, expAvgSq.get(i).toTensor()))
        << named[i].name << " max diff "
        << (it->expAvgSq - expAvgSq.get(i).toTensor()).abs().max().item<double>() << " of "
        << it->expAvgSq.abs().max().item<double>();
    EXPECT_EQ(it->step.item<float>(), stepCounts.get(i).toTensor().item<float>()) << named[i].name;
  }
}

}  // namespace
}  // namespace fs::step
