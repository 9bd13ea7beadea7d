#include "backend/step/precision.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace fs::step {
namespace {

PrecisionPolicy policy(const std::string& name) {
  auto r = precisionPolicy(name, torch::kCPU);
  EXPECT_TRUE(r.isOk()) << r.status().message();
  return r.value();
}

TEST(Precision, PoliciesOnCpu) {
  const auto fp32 = policy("fp32");
  EXPECT_EQ(fp32.paramDtype, torch::kFloat32);
  EXPECT_FALSE(fp32.autocast);
  const auto bf16 = policy("bf16");
  EXPECT_EQ(bf16.paramDtype, torch::kBFloat16);
  EXPECT_EQ(bf16.inputDtype, torch::kBFloat16);
  EXPECT_FALSE(bf16.lossScaling);
  const auto amp = policy("amp_bf16");
  EXPECT_EQ(amp.paramDtype, torch::kFloat32) << "fp32 weights and optimizer";
  EXPECT_TRUE(amp.autocast);
  EXPECT_EQ(amp.autocastDtype, torch::kBFloat16);
  EXPECT_FALSE(amp.lossScaling);
}

TEST(Precision, Fp16NeedsCudaAndUnknownNamesAreErrors) {
  for (const char* name : {"fp16", "amp_fp16"}) {
    const auto r = precisionPolicy(name, torch::kCPU);
    ASSERT_FALSE(r.isOk()) << name;
    EXPECT_NE(r.status().message().find("optim.precision"), std::string::npos);
  }
  EXPECT_FALSE(precisionPolicy("amp", torch::kCPU).isOk());
}

TEST(Precision, AutocastScopeRunsMatmulsInBf16OnCpu) {
  const auto a = torch::randn({4, 8});
  const auto b = torch::randn({8, 3});
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat32);
  {
    AutocastScope scope(policy("amp_bf16"), torch::kCPU);
    EXPECT_TRUE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
    EXPECT_EQ(torch::nn::functional::linear(a, b.t()).scalar_type(), torch::kBFloat16);
    {
      AutocastScope inner(policy("amp_bf16"), torch::kCPU);
      EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
    }
    EXPECT_TRUE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU))
        << "the inner scope restores, not disables";
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat32);
  {
    AutocastScope none(policy("fp32"), torch::kCPU);
    EXPECT_FALSE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
  }
}

TEST(Precision, AutocastGradientsReachFloat32Weights) {
  auto w = torch::randn({8, 3}, torch::requires_grad());
  const auto x = torch::randn({4, 8});
  torch::Tensor y;
  {
    AutocastScope scope(policy("amp_bf16"), torch::kCPU);
    y = torch::mm(x, w);
  }
  y.to(torch::kFloat32).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().scalar_type(), torch::kFloat32);
}

}  // namespace
}  // namespace fs::step
