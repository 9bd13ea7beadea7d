// Gradient checkpointing gives the same loss and the same gradients as
// without, dropout included (NOTE [Activation checkpointing]).
#include "backend/model/activation_checkpoint.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <string>

#include "tiny_model.h"

namespace fs::model {
namespace {

struct StepResult {
  torch::Tensor loss;
  std::map<std::string, torch::Tensor> grads;
  int checkpoint_nodes = 0;
};

int countNodes(const torch::Tensor& root, const std::string& needle) {
  std::set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> stack;
  if (root.grad_fn()) stack.push_back(root.grad_fn().get());
  int count = 0;
  while (!stack.empty()) {
    auto* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    if (node->name().find(needle) != std::string::npos) ++count;
    for (const auto& edge : node->next_edges()) {
      if (edge.function) stack.push_back(edge.function.get());
    }
  }
  return count;
}

StepResult step(const std::string& variant, bool checkpointing, bool autocast = false) {
  // Dropout as the family has it (OPT: 0.1), so the recomputation must replay the masks.
  auto model = testing::buildTiny(variant, 0, /*no_dropout=*/false);
  model->freezeAsOpenFlamingo();
  testing::setGates(model);
  model->setGradientCheckpointing(checkpointing);
  const auto batch = testing::tinyBatch(model->options());
  torch::manual_seed(42);
  StepResult r;
  {
    // Backward inside the autocast scope too, before the cast cache is cleared.
    testing::CpuAutocast amp(autocast);
    const auto logits =
        model->forward(batch.vision_x, batch.input_ids, batch.attention_mask).to(torch::kFloat);
    r.checkpoint_nodes = countNodes(logits, "CheckpointFunction");
    r.loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}),
                                                  batch.input_ids.reshape({-1}));
    r.loss.backward();
  }
  for (const auto& [name, p] : model->namedParameters()) {
    if (p.requires_grad()) r.grads[name] = p.grad();
  }
  return r;
}

class Checkpointing : public ::testing::TestWithParam<std::string> {};

TEST_P(Checkpointing, SameLossAndGradientsAsWithout) {
  const auto plain = step(GetParam(), false);
  const auto ckpt = step(GetParam(), true);
  EXPECT_EQ(plain.checkpoint_nodes, 0);
  // The perceiver, 2 gated blocks and 2 decoder layers.
  EXPECT_EQ(ckpt.checkpoint_nodes, 5);
  EXPECT_TRUE(torch::equal(plain.loss, ckpt.loss))
      << plain.loss.item<double>() << " vs " << ckpt.loss.item<double>();
  ASSERT_EQ(plain.grads.size(), ckpt.grads.size());
  for (const auto& [name, g] : plain.grads) {
    const auto& other = ckpt.grads.at(name);
    ASSERT_TRUE(g.defined()) << name;
    ASSERT_TRUE(other.defined()) << name << " got no gradient with checkpointing";
    EXPECT_TRUE(torch::equal(g, other)) << name << " max diff " << (g - other).abs().max().item<double>();
  }
}

// amp_bf16: the autocast weight casts must keep their gradients through the re-run.
TEST(Checkpointing, SameGradientsUnderCpuAutocast) {
  const auto plain = step("opt", false, /*autocast=*/true);
  const auto ckpt = step("opt", true, /*autocast=*/true);
  EXPECT_TRUE(torch::equal(plain.loss, ckpt.loss));
  for (const auto& [name, g] : plain.grads) {
    const auto& other = ckpt.grads.at(name);
    ASSERT_TRUE(other.defined()) << name << " got no gradient with checkpointing under autocast";
    EXPECT_TRUE(torch::equal(g, other)) << name << " max diff " << (g - other).abs().max().item<double>();
  }
}

INSTANTIATE_TEST_SUITE_P(Families, Checkpointing, ::testing::Values("opt", "mpt-1b", "pythia", "llama"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (auto& c : name) c = (c == '-') ? '_' : c;
                           return name;
                         });

TEST(CheckpointedFunction, ParameterGradientsFlowThroughTheGraph) {
  torch::manual_seed(1);
  auto linear = torch::nn::Linear(4, 3);
  const auto x = torch::randn({2, 4}, torch::requires_grad());
  const auto body = [&](const std::vector<torch::Tensor>& in) {
    return torch::dropout(torch::tanh(linear->forward(in[0])), 0.5, true);
  };
  torch::manual_seed(2);
  body({x}).pow(2).sum().backward();
  const auto gx = x.grad().clone();
  const auto gw = linear->weight.grad().clone();
  x.mutable_grad().reset();
  linear->weight.mutable_grad().reset();
  linear->bias.mutable_grad().reset();

  torch::manual_seed(2);
  const auto out = checkpointed(body, {x}, trainableParameters(*linear));
  torch::manual_seed(99);  // other RNG use between forward and backward must not matter
  torch::rand({10});
  out.pow(2).sum().backward();
  EXPECT_TRUE(torch::equal(x.grad(), gx));
  EXPECT_TRUE(torch::equal(linear->weight.grad(), gw));
}

TEST(CheckpointedFunction, WithoutGradModeItJustRuns) {
  auto linear = torch::nn::Linear(4, 3);
  const auto x = torch::randn({2, 4});
  torch::NoGradGuard no_grad;
  const auto out = checkpointed([&](const std::vector<torch::Tensor>& in) { return linear->forward(in[0]); },
                                {x}, trainableParameters(*linear));
  EXPECT_FALSE(out.requires_grad());
  EXPECT_TRUE(torch::equal(out, linear->forward(x)));
}

}  // namespace
}  // namespace fs::model
