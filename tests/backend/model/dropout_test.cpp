// NOTE [Dropout]: the counter-based dropout must be dropout (keep rate 1 - p,
// kept values scaled by 1 / (1 - p), neighbours independent, gradient = the
// mask), reproducible from the generator's state alone, and the same at any
// thread count.
#include "backend/model/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <mutex>

namespace fs::model {
namespace {

TEST(Dropout, KeepsOneMinusPAndScalesTheKept) {
  torch::manual_seed(1);
  const int64_t n = 1 << 20;
  for (const double p : {0.1, 0.5, 0.9}) {
    const auto y = applyDropout(torch::ones({n}), p, true);
    const auto kept = y.ne(0);
    const double rate = kept.to(torch::kDouble).mean().item<double>();
    const double sigma = std::sqrt(p * (1 - p) / static_cast<double>(n));
    EXPECT_NEAR(rate, 1.0 - p, 5 * sigma) << "p " << p;
    EXPECT_FLOAT_EQ(y.masked_select(kept).min().item<float>(), static_cast<float>(1.0 / (1.0 - p)));
    EXPECT_FLOAT_EQ(y.masked_select(kept).max().item<float>(), static_cast<float>(1.0 / (1.0 - p)));
    // Neighbouring elements are independent: both kept at rate (1 - p)^2.
    const auto both =
        (kept.narrow(0, 0, n - 1) & kept.narrow(0, 1, n - 1)).to(torch::kDouble).mean().item<double>();
    const double q = (1 - p) * (1 - p);
    EXPECT_NEAR(both, q, 5 * std::sqrt(q * (1 - q) / static_cast<double>(n))) << "p " << p;
  }
}

TEST(Dropout, SuccessiveCallsDrawFreshMasks) {
  torch::manual_seed(2);
  const auto a = applyDropout(torch::ones({4096}), 0.5, true);
  const auto b = applyDropout(torch::ones({4096}), 0.5, true);
  EXPECT_FALSE(torch::equal(a, b));
}

TEST(Dropout, ReproducibleFromTheGeneratorStateAtAnyThreadCount) {
  const int saved = at::get_num_threads();
  at::set_num_threads(1);
  torch::manual_seed(7);
  const auto one = applyDropout(torch::ones({300000}), 0.3, true);
  at::set_num_threads(2);
  torch::manual_seed(7);
  const auto two = applyDropout(torch::ones({300000}), 0.3, true);
  at::set_num_threads(saved);
  EXPECT_TRUE(torch::equal(one, two));
  // Restoring a saved generator state gives the same mask (activation checkpointing relies on it).
  auto gen = at::detail::getDefaultCPUGenerator();
  const auto state = gen.get_state();
  const auto first = applyDropout(torch::ones({1000}), 0.3, true);
  gen.set_state(state);
  EXPECT_TRUE(torch::equal(applyDropout(torch::ones({1000}), 0.3, true), first));
}

TEST(Dropout, GradientIsTheScaledMask) {
  torch::manual_seed(3);
  const auto x = torch::randn({64, 33}).requires_grad_(true);
  const auto y = applyDropout(x, 0.25, true);
  y.sum().backward();
  const auto mask = y.detach().ne(0).to(torch::kFloat) / 0.75f;
  EXPECT_TRUE(torch::allclose(x.grad(), mask));
  EXPECT_TRUE(torch::allclose(y.detach(), x.detach() * mask));
}

// NOTE [Fused dropout]: the one pass gives exactly x * (1 / (1 - p)) where dropoutKeeps keeps the element
// and 0 elsewhere, from a strided input too, and the same mask to the gradient.
TEST(Dropout, FusedPassIsTheProductWithTheCounterMask) {
  torch::manual_seed(6);
  const auto base = torch::randn({40, 70});
  const auto x = base.t().requires_grad_(false);  // strided
  auto gen = at::detail::getDefaultCPUGenerator();
  const auto state = gen.get_state();
  const uint64_t seed = [&] {
    std::lock_guard<std::mutex> lock(gen.mutex());
    return gen.get<at::CPUGeneratorImpl>()->random64();
  }();
  gen.set_state(state);
  const double p = 0.2;
  const auto threshold = static_cast<uint64_t>(std::llround((1.0 - p) * 4294967296.0));
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  const auto flat = x.contiguous().view({-1});
  auto expected = torch::empty_like(flat);
  for (int64_t i = 0; i < flat.numel(); ++i)
    expected[i] =
        flat[i].item<float>() * (dropoutKeeps(seed, static_cast<uint64_t>(i), threshold) ? scale : 0.0f);
  const auto leaf = x.detach().clone().requires_grad_(true);
  gen.set_state(state);
  const auto y = applyDropout(leaf, p, true);
  EXPECT_TRUE(torch::equal(y.detach().view({-1}), expected));
  const auto upstream = torch::randn_like(y);
  y.backward(upstream);
  const auto kept = expected.view(y.sizes()).ne(0).to(torch::kFloat) * scale;
  EXPECT_TRUE(torch::equal(leaf.grad(), upstream * kept));
}

TEST(Dropout, IdentityWhenOffAndClearErrorsOutOfRange) {
  const auto x = torch::randn({10});
  EXPECT_TRUE(applyDropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(applyDropout(x, 0.0, true).is_same(x));
  EXPECT_EQ(applyDropout(x, 1.0, true).abs().sum().item<float>(), 0.0f);
  // Other dtypes take torch::dropout: still dropout.
  const auto d = applyDropout(torch::ones({1000}, torch::kDouble), 0.5, true);
  EXPECT_GT(d.eq(0).sum().item<int64_t>(), 0);
  EXPECT_GT(d.eq(2).sum().item<int64_t>(), 0);
  try {
    applyDropout(x, 1.5, true);
    ADD_FAILURE() << "p = 1.5 accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("dropout probability must lie in [0, 1], got 1.5"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fs::model
