#include "backend/step/grad_scaler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace fs::step {
namespace {

torch::Tensor withGrad(torch::Tensor grad) {
  auto p = torch::zeros_like(grad).set_requires_grad(true);
  p.mutable_grad() = grad;
  return p;
}

TEST(GradScaler, ScalesLossAndUnscalesGradients) {
  GradScaler scaler;
  EXPECT_EQ(scaler.scaleValue(), 65536.0);
  auto w = torch::tensor({0.5f, -1.0f}, torch::requires_grad());
  const auto loss = (w * w).sum();
  const auto scaled = scaler.scale(loss);
  EXPECT_EQ(scaled.item<float>(), loss.item<float>() * 65536.0f);
  scaled.backward();
  EXPECT_FALSE(scaler.unscale({w}));
  EXPECT_TRUE(torch::allclose(w.grad(), torch::tensor({1.0f, -2.0f})));
  int steps = 0;
  EXPECT_TRUE(scaler.step({w}, [&] { ++steps; }));
  EXPECT_EQ(steps, 1);
  scaler.update();
  EXPECT_EQ(scaler.scaleValue(), 65536.0);
  EXPECT_EQ(scaler.growthTracker(), 1);
}

TEST(GradScaler, SkipsTheStepAndBacksOffOnInf) {
  GradScaler scaler;
  auto p = withGrad(torch::tensor({1.0f, INFINITY}));
  int steps = 0;
  EXPECT_FALSE(scaler.step({p}, [&] { ++steps; })) << "step() unscales when unscale() was not called";
  EXPECT_EQ(steps, 0);
  scaler.update();
  EXPECT_EQ(scaler.scaleValue(), 32768.0);
  EXPECT_EQ(scaler.growthTracker(), 0);

  auto q = withGrad(torch::tensor({NAN}));
  EXPECT_TRUE(scaler.unscale({q}));
  EXPECT_FALSE(scaler.step({q}, [&] { ++steps; }));
  scaler.update();
  EXPECT_EQ(scaler.scaleValue(), 16384.0);
}

TEST(GradScaler, GrowsAfterTheIntervalOfGoodSteps) {
  GradScaler scaler({.initScale = 8.0, .growthFactor = 2.0, .backoffFactor = 0.5, .growthInterval = 3});
  for (int i = 0; i < 2; ++i) {
    auto p = withGrad(torch::ones({2}));
    scaler.step({p}, [] {});
    scaler.update();
    EXPECT_EQ(scaler.scaleValue(), 8.0);
  }
  auto p = withGrad(torch::ones({2}));
  scaler.step({p}, [] {});
  scaler.update();
  EXPECT_EQ(scaler.scaleValue(), 16.0);
  EXPECT_EQ(scaler.growthTracker(), 0);
  // An inf resets the count.
  auto a = withGrad(torch::ones({1}));
  scaler.step({a}, [] {});
  scaler.update();
  auto bad = withGrad(torch::tensor({INFINITY}));
  scaler.step({bad}, [] {});
  scaler.update();
  EXPECT_EQ(scaler.scaleValue(), 8.0);
  EXPECT_EQ(scaler.growthTracker(), 0);
}

TEST(GradScaler, GrowthStopsBeforeOverflow) {
  GradScaler scaler({.initScale = 3e38, .growthFactor = 2.0, .backoffFactor = 0.5, .growthInterval = 1});
  auto p = withGrad(torch::ones({1}));
  scaler.step({p}, [] {});
  scaler.update();
  EXPECT_EQ(scaler.scaleValue(), static_cast<double>(3e38f));
}

TEST(GradScaler, DoubleUnscaleIsAnErrorAndStateRoundTrips) {
  GradScaler scaler;
  auto p = withGrad(torch::ones({1}));
  scaler.unscale({p});
  EXPECT_THROW(scaler.unscale({p}), c10::Error);
  scaler.update();
  GradScaler other;
  other.load(GradScalerState{1024.0, 2.0, 0.5, 2000, 7});
  EXPECT_EQ(other.scaleValue(), 1024.0);
  EXPECT_EQ(other.state().growthTracker, 7);
}

TEST(GradScaler, DisabledIsTheIdentity) {
  GradScaler scaler({.enabled = false});
  const auto loss = torch::tensor(2.0f);
  EXPECT_TRUE(scaler.scale(loss).is_same(loss));
  auto p = withGrad(torch::tensor({INFINITY}));
  int steps = 0;
  EXPECT_TRUE(scaler.step({p}, [&] { ++steps; }));
  EXPECT_EQ(steps, 1);
}

}  // namespace
}  // namespace fs::step
