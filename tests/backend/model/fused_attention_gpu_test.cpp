// NOTE [Fused attention] on a CUDA device: the kernels SDPA picks (flash
// attention where there is no mask, memory-efficient attention where there is
// one: NOTE [Fused self-attention], [Fused resampler attention], [Fused
// cross-attention]) must give the tiny model's logits and every gradient
// that SDPA's math path gives, for every LM family, both batches of
// fused_attention_cases.h, padding computed and skipped, in bf16 weights,
// amp_bf16 (fp32 weights, CUDA autocast) and fp32.
//
// Tolerances, ||fused - math|| / ||math||: bf16 and amp_bf16 logits 2e-2,
// gradients 5e-2 (5 and 13 bf16 epsilons of 2^-8: the fused kernels round
// the probabilities to bf16 before multiplying by v and sum in another order,
// the math path upcasts to fp32); fp32 (memory-efficient against math, both
// fp32) 1e-4 and 1e-3. A gradient's norm counts as at least 1e-3 of the
// largest gradient norm, so a tensor whose gradient nearly cancels is not
// held to a relative bound on noise. A wrong mask, scale or row zeroing is
// an O(1) error. Label gpu: Not Run without a CUDA device.
#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "fused_attention_cases.h"

namespace fs::model {
namespace {

using testing::BatchKind;

// SDPA's math path alone for a scope (the fused kernels off).
class MathOnly {
 public:
  MathOnly()
      : flash_(at::globalContext().userEnabledFlashSDP()),
        efficient_(at::globalContext().userEnabledMemEfficientSDP()),
        cudnn_(at::globalContext().userEnabledCuDNNSDP()) {
    at::globalContext().setSDPUseFlash(false);
    at::globalContext().setSDPUseMemEfficient(false);
    at::globalContext().setSDPUseCuDNN(false);
  }
  ~MathOnly() {
    at::globalContext().setSDPUseFlash(flash_);
    at::globalContext().setSDPUseMemEfficient(efficient_);
    at::globalContext().setSDPUseCuDNN(cudnn_);
  }

 private:
  bool flash_, efficient_, cudnn_;
};

// CUDA autocast to bf16 for a scope, then off with the cast cache cleared.
class CudaAutocast {
 public:
  explicit CudaAutocast(bool enabled) : enabled_(enabled) {
    if (!enabled_) return;
    at::autocast::set_autocast_dtype(at::kCUDA, torch::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
  }
  ~CudaAutocast() {
    if (!enabled_) return;
    at::autocast::set_autocast_enabled(at::kCUDA, false);
    at::autocast::clear_cache();
  }

 private:
  bool enabled_;
};

struct Mode {
  std::string name;
  bool bf16Weights;
  bool autocast;
  double logitsTolerance;
  double gradientTolerance;
};

const std::vector<Mode>& modes() {
  static const std::vector<Mode> m = {{"bf16", true, false, 2e-2, 5e-2},
                                      {"amp_bf16", false, true, 2e-2, 5e-2},
                                      {"fp32", false, false, 1e-4, 1e-3}};
  return m;
}

using Param = std::tuple<std::string, BatchKind, Padding>;

class FusedOnCuda : public ::testing::TestWithParam<Param> {};

TEST_P(FusedOnCuda, FusedKernelsMatchTheMathPath) {
  const auto& [variant, batchKind, padding] = GetParam();
  const torch::Device cuda(torch::kCUDA, 0);
  for (const auto& mode : modes()) {
    auto model = testing::buildTiny(variant, 3);
    testing::setGates(model);
    model->to(cuda);
    if (mode.bf16Weights) model->to(torch::kBFloat16);
    const auto& o = model->options();
    const auto c = testing::caseBatch(o, batchKind, padding);

    testing::ModelRun fused;
    std::vector<SdpaCall> calls;
    {
      CudaAutocast autocast(mode.autocast);
      ScopedSdpaLog log;
      fused = testing::runModel(model, c, padding, cuda);
      calls = log.calls();
    }
    testing::ModelRun math;
    {
      MathOnly only;
      CudaAutocast autocast(mode.autocast);
      math = testing::runModel(model, c, padding, cuda);
    }

    // The kernels NOTE [Fused attention] says each kind gets.
    const bool padded = c.batch.attention_mask.eq(0).any().item<bool>();
    const bool causal = o.lm().family() != "mpt" && (padding == Padding::kSkip || !padded);
    const auto unmasked = mode.name == "fp32" ? at::SDPBackend::efficient_attention  // flash takes no fp32
                                              : at::SDPBackend::flash_attention;
    ASSERT_FALSE(calls.empty()) << mode.name;
    for (const auto& call : calls) {
      const bool noMask =
          call.kind == AttentionKind::kResampler || (call.kind == AttentionKind::kCausalSelf && causal);
      EXPECT_EQ(call.backend, noMask ? unmasked : at::SDPBackend::efficient_attention)
          << mode.name << ": " << testing::kindName(call.kind);
      EXPECT_EQ(call.masked, !noMask) << mode.name << ": " << testing::kindName(call.kind);
    }

    EXPECT_FALSE(fused.logits.isnan().any().item<bool>()) << mode.name;
    const double logits = testing::normRelative(fused.logits, math.logits);
    EXPECT_LE(logits, mode.logitsTolerance) << mode.name << ": logits";
    double largest = 0.0;
    for (const auto& [name, g] : math.grads) {
      if (g.defined()) largest = std::max(largest, g.norm().item<double>());
    }
    double worst = 0.0;
    std::string worstName;
    ASSERT_EQ(fused.grads.size(), math.grads.size());
    for (size_t i = 0; i < math.grads.size(); ++i) {
      const auto& [name, g] = math.grads[i];
      ASSERT_EQ(fused.grads[i].second.defined(), g.defined()) << mode.name << ": " << name;
      if (!g.defined()) continue;
      const double e = testing::normRelative(fused.grads[i].second, g, 1e-3 * largest);
      EXPECT_LE(e, mode.gradientTolerance) << mode.name << ": gradient of " << name;
      if (e > worst) {
        worst = e;
        worstName = name;
      }
    }
    std::printf("%-8s %-6s %-7s %-8s logits %.2e  gradients %.2e (%s)\n", variant.c_str(),
                testing::batchName(batchKind).c_str(), padding == Padding::kSkip ? "skip" : "compute",
                mode.name.c_str(), logits, worst, worstName.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Families, FusedOnCuda,
                         ::testing::Combine(::testing::ValuesIn(testing::variants()),
                                            ::testing::Values(BatchKind::kPadded, BatchKind::kSlots),
                                            ::testing::Values(Padding::kCompute, Padding::kSkip)),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param) + "_" +
                                           testing::batchName(std::get<1>(info.param)) +
                                           (std::get<2>(info.param) == Padding::kSkip ? "_skip" : "_compute");
                           for (auto& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

}  // namespace
}  // namespace fs::model
