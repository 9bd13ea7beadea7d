#include "backend/step/grad_clip.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "tests/backend/step/python_oracle.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::step {
namespace {

torch::Tensor withGrad(torch::Tensor grad) {
  auto p = torch::zeros_like(grad).set_requires_grad(true);
  p.mutable_grad() = grad;
  return p;
}

TEST(ClipGradNorm, GlobalNormAndCoefficient) {
  auto a = withGrad(torch::tensor({3.0f}));
  auto b = withGrad(torch::tensor({0.0f, 4.0f}));
  auto frozen = torch::ones({2}).set_requires_grad(true);  // no gradient: ignored
  const ClipResult r = clipGradNorm({a, b, frozen}, {.maxNorm = 1.0});
  EXPECT_NEAR(r.norm, 5.0, 1e-6);
  EXPECT_TRUE(r.finite);
  EXPECT_TRUE(r.clipped);
  EXPECT_NEAR(r.coef, 1.0 / (5.0 + 1e-6), 1e-7);
  EXPECT_NEAR(a.grad()[0].item<float>(), 3.0 / (5.0 + 1e-6), 1e-6);
  EXPECT_NEAR(b.grad()[1].item<float>(), 4.0 / (5.0 + 1e-6), 1e-6);
  EXPECT_FALSE(frozen.grad().defined());
}

TEST(ClipGradNorm, BelowTheMaxNormNothingChanges) {
  auto a = withGrad(torch::tensor({0.3f, 0.4f}));
  const ClipResult r = clipGradNorm({a}, {.maxNorm = 1.0});
  EXPECT_FALSE(r.clipped);
  EXPECT_EQ(r.coef, 1.0);
  EXPECT_TRUE(torch::equal(a.grad(), torch::tensor({0.3f, 0.4f})));
}

TEST(ClipGradNorm, NoGradientsAndMeasureOnly) {
  EXPECT_EQ(clipGradNorm({torch::ones({2}).set_requires_grad(true)}).norm, 0.0);
  auto a = withGrad(torch::tensor({30.0f, 40.0f}));
  const ClipResult r = clipGradNorm({a}, {.maxNorm = 0.0});
  EXPECT_NEAR(r.norm, 50.0, 1e-5);
  EXPECT_FALSE(r.clipped);
  EXPECT_EQ(a.grad()[0].item<float>(), 30.0f);
  EXPECT_NEAR(globalGradNorm({a}), 50.0, 1e-5);
}

TEST(ClipGradNorm, NonFiniteNormIsDetected) {
  auto a = withGrad(torch::tensor({1.0f, INFINITY}));
  auto b = withGrad(torch::tensor({2.0f}));
  const ClipResult r = clipGradNorm({a, b});
  EXPECT_FALSE(r.finite);
  EXPECT_TRUE(std::isinf(r.norm));
  EXPECT_EQ(b.grad()[0].item<float>(), 2.0f) << "left alone by default";

  auto c = withGrad(torch::tensor({1.0f, NAN}));
  auto d = withGrad(torch::tensor({2.0f}));
  const ClipResult ref = clipGradNorm({c, d}, {.maxNorm = 1.0, .referenceNonFinite = true});
  EXPECT_FALSE(ref.finite);
  EXPECT_TRUE(std::isnan(d.grad()[0].item<float>())) << "torch multiplies by the NaN coefficient";
}

TEST(ClipGradNorm, Bf16GradientsAccumulateInFloat32) {
  auto a = withGrad(torch::full({1000}, 0.01f).to(torch::kBFloat16));
  const ClipResult r = clipGradNorm({a}, {.maxNorm = 100.0});
  EXPECT_NEAR(r.norm, std::sqrt(1000.0) * 0.01, 1e-3);
}

TEST(ClipGradNorm, MatchesTorchClipGradNormInPython) {
  if (!fs::test::pythonTorchAvailable())
    FS_FIXTURE_UNAVAILABLE(std::string(FS_PYTHON) + " cannot import torch: run scripts/install-deps.sh");
  torch::manual_seed(11);
  const std::vector<double> maxNorms = {1.0, 1000.0, 0.25};
  std::vector<std::vector<torch::Tensor>> clipped;
  std::vector<ClipResult> results;
  c10::impl::GenericList cases(c10::AnyType::get());
  for (const double maxNorm : maxNorms) {
    std::vector<torch::Tensor> grads = {torch::randn({7, 5}), torch::randn({3}) * 10,
                                        torch::randn({2, 2, 2}) * 0.01, torch::randn({1})};
    std::vector<torch::Tensor> params;
    for (const auto& g : grads) params.push_back(withGrad(g.clone()));
    results.push_back(clipGradNorm(params, {.maxNorm = maxNorm}));
    std::vector<torch::Tensor> after;
    for (const auto& p : params) after.push_back(p.grad());
    clipped.push_back(after);
    cases.push_back(c10::ivalue::Tuple::create(
        {c10::List<torch::Tensor>(grads), torch::tensor(maxNorm, torch::kFloat64)}));
  }
  const fs::test::ScratchDir scratch("clip");
  const std::string& dir = scratch.path;
  fs::test::saveForPython(cases, dir + "/in.pt");
  ASSERT_TRUE(fs::test::runOracle("clip_oracle.py", dir + "/in.pt", dir + "/out.pt"));
  const auto out = fs::test::loadFromPython(dir + "/out.pt").toList();
  ASSERT_EQ(out.size(), maxNorms.size());
  for (size_t k = 0; k < maxNorms.size(); ++k) {
    const auto expected = out.get(k).toList();
    EXPECT_EQ(static_cast<float>(results[k].norm), expected.get(0).toTensor().item<float>()) << maxNorms[k];
    const auto grads = expected.get(1).toList();
    for (size_t i = 0; i < clipped[k].size(); ++i) {
      EXPECT_TRUE(torch::equal(clipped[k][i], grads.get(i).toTensor()))
          << "max_norm " << maxNorms[k] << " #" << i;
    }
  }
}

}  // namespace
}  // namespace fs::step
