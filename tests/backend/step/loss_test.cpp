#include "backend/step/loss.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "backend/step/labels.h"
#include "tests/backend/step/python_oracle.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::step {
namespace {

constexpr int64_t X = kIgnoreIndex;

TEST(CausalLmLoss, HandComputedShift) {
  // One sample, L = 3, V = 2: position 0 predicts label 1, position 1 label 2.
  const auto logits = torch::tensor({0.0f, 1.0f, 2.0f, 0.0f, 5.0f, 5.0f}).view({1, 3, 2});
  const auto labels = torch::tensor(std::vector<int64_t>{7, 1, 0}).view({1, 3});
  const LmLoss r = causalLmLoss(logits, labels);
  const double l0 = -(1.0 - std::log(1.0 + std::exp(1.0)));  // softmax([0,1])[1]
  const double l1 = -(2.0 - std::log(std::exp(2.0) + 1.0));  // softmax([2,0])[0]
  EXPECT_NEAR(r.loss.item<double>(), (l0 + l1) / 2, 1e-6);
  EXPECT_EQ(r.targets, 2);
  EXPECT_FALSE(r.noTargets);
}

TEST(CausalLmLoss, IgnoredTargetsAreLeftOutOfTheMean) {
  const auto logits = torch::tensor({0.0f, 1.0f, 2.0f, 0.0f, 5.0f, 5.0f}).view({1, 3, 2});
  const auto labels = torch::tensor(std::vector<int64_t>{X, X, 0}).view({1, 3});
  const LmLoss r = causalLmLoss(logits, labels);
  EXPECT_NEAR(r.loss.item<double>(), -(2.0 - std::log(std::exp(2.0) + 1.0)), 1e-6);
  EXPECT_EQ(r.targets, 1);
}

TEST(CausalLmLoss, NoTargetsGivesZeroAndZeroGradientsByDefault) {
  auto logits = torch::randn({2, 5, 7}, torch::requires_grad());
  const auto labels = torch::full({2, 5}, X, torch::kInt64);
  labels[0][0] = 3;  // position 0 is never a target
  const LmLoss r = causalLmLoss(logits, labels);
  EXPECT_TRUE(r.noTargets);
  EXPECT_EQ(r.targets, 0);
  EXPECT_EQ(r.loss.item<double>(), 0.0);
  r.loss.backward();
  ASSERT_TRUE(logits.grad().defined());
  EXPECT_TRUE(torch::all(logits.grad() == 0).item<bool>());
}

// The trainer counts targets on the host (countTargets) and passes the count: the same loss, no read-back.
TEST(CausalLmLoss, ACountFromTheHostGivesTheSameLossAndNoTargetsDecision) {
  torch::manual_seed(3);
  const auto logits = torch::randn({3, 6, 9});
  auto labels = torch::randint(0, 9, {3, 6}, torch::kInt64);
  labels.masked_fill_(torch::rand({3, 6}) < 0.4, X);
  const LmLoss counted = causalLmLoss(logits, labels);
  LossOptions given;
  given.targets = countTargets(labels);
  EXPECT_EQ(given.targets, counted.targets);
  EXPECT_EQ(given.targets, labelStats(labels).targets);
  const LmLoss r = causalLmLoss(logits, labels, given);
  EXPECT_EQ(r.targets, counted.targets);
  EXPECT_TRUE(torch::equal(r.loss, counted.loss));
  const auto none = torch::full({2, 5}, X, torch::kInt64);
  given.targets = countTargets(none);
  EXPECT_EQ(given.targets, 0);
  EXPECT_TRUE(causalLmLoss(torch::randn({2, 5, 7}), none, given).noTargets);
  // A strided view counts the same as its copy; labels off the host are refused, by name.
  const auto view = labels.t().contiguous().t();
  EXPECT_EQ(countTargets(view), counted.targets);
  EXPECT_THROW(countTargets(labels.to(torch::kMeta)), c10::Error);
}

TEST(CausalLmLoss, NoTargetsGivesTheReferenceNaNInCompatMode) {
  const auto logits = torch::randn({2, 5, 7});
  const auto labels = torch::full({2, 5}, X, torch::kInt64);
  const LmLoss r = causalLmLoss(logits, labels, LossOptions{.referenceNaN = true});
  EXPECT_TRUE(r.noTargets);
  EXPECT_TRUE(std::isnan(r.loss.item<double>()));
}

// NOTE [Logits at the targets]: the loss from the targets' logits alone is causalLmLoss's, value and
// gradient, including the empty batch's 0 (or the reference's NaN) and bf16 logits in float32.
TEST(LmLossAtTargets, EqualsTheShiftedLossOverEveryPosition) {
  torch::manual_seed(4);
  const auto logits = torch::randn({3, 6, 9}, torch::requires_grad());
  auto labels = torch::randint(0, 9, {3, 6}, torch::kInt64);
  labels.masked_fill_(torch::rand({3, 6}) < 0.4, X);
  const LmLoss full = causalLmLoss(logits, labels);
  full.loss.backward();
  const auto fullGrad = logits.grad().clone();
  logits.mutable_grad().reset();
  const Targets t = targetsOf(labels);
  const auto picked = logits.reshape({-1, 9}).index_select(0, t.positions);
  const LmLoss at = lmLossAtTargets(picked, t.labels, LossOptions{.targets = countTargets(labels)});
  EXPECT_EQ(at.targets, full.targets);
  EXPECT_FALSE(at.noTargets);
  EXPECT_NEAR(at.loss.item<double>(), full.loss.item<double>(), 1e-6);
  at.loss.backward();
  EXPECT_TRUE(torch::allclose(logits.grad(), fullGrad, 1e-6, 1e-7));
  // A count that disagrees with the targets given is refused.
  EXPECT_THROW(lmLossAtTargets(picked, t.labels, LossOptions{.targets = 1}), c10::Error);
  EXPECT_THROW(lmLossAtTargets(picked, t.labels.narrow(0, 0, 1)), c10::Error);
  // bf16 logits: float32, as causalLmLoss.
  EXPECT_EQ(lmLossAtTargets(picked.detach().to(torch::kBFloat16), t.labels).loss.scalar_type(),
            torch::kFloat32);
}

TEST(LmLossAtTargets, NoTargetsGivesZeroOrTheReferenceNaN) {
  const auto logits = torch::randn({0, 7}, torch::requires_grad());
  const auto targets = torch::empty({0}, torch::kInt64);
  const LmLoss r = lmLossAtTargets(logits, targets);
  EXPECT_TRUE(r.noTargets);
  EXPECT_EQ(r.loss.item<double>(), 0.0);
  r.loss.backward();
  EXPECT_TRUE(logits.grad().defined());
  EXPECT_TRUE(
      std::isnan(lmLossAtTargets(logits, targets, LossOptions{.referenceNaN = true}).loss.item<double>()));
}

TEST(CausalLmLoss, Bf16LogitsAreComputedInFloat32) {
  const auto logits = torch::randn({2, 4, 9});
  const auto labels = torch::randint(0, 9, {2, 4}, torch::kInt64);
  const LmLoss r = causalLmLoss(logits.to(torch::kBFloat16), labels);
  EXPECT_EQ(r.loss.scalar_type(), torch::kFloat32);
  const LmLoss ref = causalLmLoss(logits.to(torch::kBFloat16).to(torch::kFloat32), labels);
  EXPECT_EQ(r.loss.item<float>(), ref.loss.item<float>());
}

TEST(CausalLmLoss, MatchesTransformersForCausalLMLoss) {
  if (!fs::test::pythonTorchAvailable())
    FS_FIXTURE_UNAVAILABLE(std::string(FS_PYTHON) + " cannot import torch: run scripts/install-deps.sh");
  torch::manual_seed(3);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> cases;
  for (auto [B, L, V] :
       {std::tuple{1, 2, 3}, std::tuple{3, 7, 11}, std::tuple{4, 33, 130}, std::tuple{2, 48, 50}}) {
    auto logits = torch::randn({B, L, V}) * 3;
    auto labels = torch::randint(0, V, {B, L}, torch::kInt64);
    labels.masked_fill_(torch::rand({B, L}) < 0.3, X);
    labels[0][1] = 0;               // at least one target
    if (B > 2) labels[1].fill_(X);  // a sample without targets
    cases.emplace_back(logits, labels);
  }
  cases.emplace_back(torch::randn({2, 6, 13}).to(torch::kBFloat16),
                     torch::randint(0, 13, {2, 6}, torch::kInt64));

  c10::impl::GenericList list(c10::AnyType::get());
  for (const auto& [logits, labels] : cases) list.push_back(c10::ivalue::Tuple::create({logits, labels}));
  const fs::test::ScratchDir scratch("loss");
  const std::string& dir = scratch.path;
  fs::test::saveForPython(list, dir + "/in.pt");
  ASSERT_TRUE(fs::test::runOracle("loss_oracle.py", dir + "/in.pt", dir + "/out.pt"));
  const auto expected = fs::test::loadFromPython(dir + "/out.pt").toList();
  ASSERT_EQ(expected.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const LmLoss r = causalLmLoss(cases[i].first, cases[i].second);
    const float want = expected.get(i).toTensor().item<float>();
    EXPECT_EQ(r.loss.item<float>(), want) << "case " << i << " (bit-exact)";
  }
}

}  // namespace
}  // namespace fs::step
