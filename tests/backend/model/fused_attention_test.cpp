// NOTE [Fused attention]: the SDPA path that runs on CUDA, run here on the CPU
// (ScopedSdpaOnCpu), must give the tiny model's logits and every parameter's
// gradient that the CPU kernels give (NOTE [Packed attention], NOTE [Slot
// attention], the composite), for each attention kind alone and all
// together, every LM family (OPT's learned positions, GPT-NeoX / Pythia /
// LLaMA rotary, MPT's ALiBi with and without QK LayerNorm), padding computed
// and skipped, text before the first image, uniform rows past the last slot,
// unreferenced media slots and packed attending tokens.
//
// Tolerance: fp32, max |SDPA - kernels| <= 1e-5 x the tensor's largest
// magnitude (1e-3 at least), as skip_padding_test and packed_attention_test
// hold paths that differ in float summation order only. SDPA's math path
// differs from the kernels in at most that; measured (printed per case):
// logits <= 4.2e-7, gradients <= 4.7e-6, the resampler's bit for bit (the
// same ops in the same order as its composite). A wrong mask, scale, row
// zeroing or gradient path moves them by O(1).
//
// SDPA's CPU flash kernel (the CPU's default SDPA backend) runs too: like
// the CUDA kernels it keeps one log-sum-exp per row for backward, so it
// checks what the math path cannot, rows with no visible key (NOTE [Fused
// cross-attention]: handed over fully masked, they gave gradients off by
// O(1) here). Its blocked online softmax is held to 5e-5: the gates'
// gradients, sums over every position with much cancellation, reach 1.2e-5.
#include "backend/model/fused_attention.h"

#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "fused_attention_cases.h"

namespace fs::model {
namespace {

using testing::BatchKind;

constexpr double kTolerance = 1e-5;
// SDPA's CPU flash kernel (blocked online softmax, rescaled per block of keys): its gate gradients, sums
// over every position with much cancellation, measured up to 1.2e-5.
constexpr double kFlashTolerance = 5e-5;

// SDPA's CPU backend for a scope: its math path (flash off) or the CPU flash kernel.
class CpuSdpaBackend {
 public:
  explicit CpuSdpaBackend(bool flash) : previous_(at::globalContext().userEnabledFlashSDP()) {
    at::globalContext().setSDPUseFlash(flash);
  }
  ~CpuSdpaBackend() { at::globalContext().setSDPUseFlash(previous_); }

 private:
  bool previous_;
};

struct KindSet {
  std::string name;
  std::vector<AttentionKind> kinds;
};

const std::vector<KindSet>& kindSets() {
  static const std::vector<KindSet> sets = {
      {"self", {AttentionKind::kCausalSelf}},
      {"resampler", {AttentionKind::kResampler}},
      {"cross", {AttentionKind::kMediaCross}},
      {"all", {AttentionKind::kCausalSelf, AttentionKind::kResampler, AttentionKind::kMediaCross}},
  };
  return sets;
}

using Param = std::tuple<std::string, BatchKind, Padding>;

class SdpaOnCpu : public ::testing::TestWithParam<Param> {};

TEST_P(SdpaOnCpu, LogitsAndEveryGradientMatchTheCpuKernels) {
  const auto& [variant, batchKind, padding] = GetParam();
  auto model = testing::buildTiny(variant, 3);
  testing::setGates(model);
  const auto& o = model->options();
  const auto c = testing::caseBatch(o, batchKind, padding);
  const testing::ModelRun want = testing::runModel(model, c, padding);

  // What NOTE [Fused self-attention] decides for this batch.
  const bool padded = c.batch.attention_mask.eq(0).any().item<bool>();
  const bool expectCausal = o.lm().family() != "mpt" && (padding == Padding::kSkip || !padded);
  std::map<AttentionKind, size_t> callsPerForward = {
      {AttentionKind::kCausalSelf, static_cast<size_t>(o.lm().layers())},
      {AttentionKind::kResampler, static_cast<size_t>(o.perceiver().depth())},
      {AttentionKind::kMediaCross, model->gatedCrossAttentionBlocks().size()}};

  for (const bool flash : {false, true}) {
    for (const auto& set : kindSets()) {
      const std::string what = set.name + (flash ? " (CPU flash)" : " (math)");
      testing::ModelRun got;
      std::vector<SdpaCall> calls;
      {
        CpuSdpaBackend backend(flash);
        ScopedSdpaOnCpu on(set.kinds);
        ScopedSdpaLog log;
        got = testing::runModel(model, c, padding);
        calls = log.calls();
      }
      // The path under test was taken, with the mask NOTE [Fused self-attention] names.
      std::map<AttentionKind, size_t> seen;
      for (const auto& call : calls) {
        ++seen[call.kind];
        EXPECT_EQ(call.backend, flash ? at::SDPBackend::flash_attention : at::SDPBackend::math) << what;
        if (call.kind == AttentionKind::kCausalSelf) {
          EXPECT_EQ(call.causal, expectCausal) << what;
          EXPECT_EQ(call.masked, !expectCausal) << what;
        } else {
          EXPECT_FALSE(call.causal) << what;
          EXPECT_EQ(call.masked, call.kind == AttentionKind::kMediaCross) << what;
        }
      }
      for (const auto kind : set.kinds)
        EXPECT_EQ(seen[kind], callsPerForward[kind]) << what << ": " << testing::kindName(kind);
      EXPECT_EQ(calls.size(), [&] {
        size_t n = 0;
        for (const auto kind : set.kinds) n += callsPerForward[kind];
        return n;
      }()) << what;

      const double tolerance = flash ? kFlashTolerance : kTolerance;
      const double logits = testing::maxRelative(got.logits, want.logits, 1e-3);
      EXPECT_LE(logits, tolerance) << what << ": logits";
      double worst = 0.0;
      std::string worstName;
      ASSERT_EQ(got.grads.size(), want.grads.size());
      for (size_t i = 0; i < want.grads.size(); ++i) {
        const auto& [name, g] = want.grads[i];
        ASSERT_EQ(got.grads[i].second.defined(), g.defined()) << what << ": " << name;
        if (!g.defined()) continue;
        const double e = testing::maxRelative(got.grads[i].second, g, 1e-3);
        EXPECT_LE(e, tolerance) << what << ": gradient of " << name;
        if (e > worst) {
          worst = e;
          worstName = name;
        }
      }
      std::printf("%-8s %-6s %-7s %-22s logits %.2e  gradients %.2e (%s)\n", variant.c_str(),
                  testing::batchName(batchKind).c_str(), padding == Padding::kSkip ? "skip" : "compute",
                  what.c_str(), logits, worst, worstName.c_str());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SdpaOnCpu,
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

TEST(FusedAttention, TheCpuRunsItsKernelsUnlessATestAsks) {
  const auto cpu = torch::zeros({1, 1, 2, 4});
  const auto meta = torch::zeros({1, 1, 2, 4}, torch::TensorOptions().device(torch::kMeta));
  for (const auto kind :
       {AttentionKind::kCausalSelf, AttentionKind::kResampler, AttentionKind::kMediaCross}) {
    EXPECT_FALSE(runsOnSdpa(kind, cpu)) << testing::kindName(kind);
    EXPECT_FALSE(runsOnSdpa(kind, meta)) << testing::kindName(kind);
  }
  {
    ScopedSdpaOnCpu on({AttentionKind::kResampler});
    EXPECT_TRUE(runsOnSdpa(AttentionKind::kResampler, cpu));
    EXPECT_FALSE(runsOnSdpa(AttentionKind::kCausalSelf, cpu));
    EXPECT_FALSE(runsOnSdpa(AttentionKind::kMediaCross, cpu));
    EXPECT_FALSE(runsOnSdpa(AttentionKind::kResampler, meta));
  }
  EXPECT_FALSE(runsOnSdpa(AttentionKind::kResampler, cpu));
}

// NOTE [Fused attention]: under autocast the fp32 bias is clamped before its
// cast to bf16 (fp32's lowest is -inf there), so a row with no visible key
// stays uniform, as the reference's, instead of SDPA's zeros.
TEST(FusedAttention, UnderAutocastAFullyMaskedRowStaysUniform) {
  torch::manual_seed(2);
  const auto q = torch::randn({1, 2, 3, 8});
  const auto k = torch::randn({1, 2, 5, 8});
  const auto v = torch::randn({1, 2, 5, 8});
  auto bias = torch::zeros({1, 1, 3, 5});
  bias[0][0][0].fill_(lowestFinite(torch::kFloat));  // row 0: nothing visible
  bias[0][0][1].narrow(0, 2, 3).fill_(lowestFinite(torch::kFloat));
  torch::Tensor out;
  {
    testing::CpuAutocast autocast;
    EXPECT_EQ(sdpaDtype(q, k, v), torch::kBFloat16);
    out = sdpaAttention(AttentionKind::kCausalSelf, q, k, v, bias, false, 0.35, 0.0);
  }
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  EXPECT_FALSE(out.isnan().any().item<bool>());
  const auto uniform = v.to(torch::kBFloat16).to(torch::kFloat).mean(-2);  // (1, 2, 8)
  EXPECT_TRUE(torch::allclose(out.select(2, 0).to(torch::kFloat), uniform, 2e-2, 2e-2))
      << out.select(2, 0) << uniform;
  // Row 1 sees keys 0 and 1 only.
  const auto p =
      (torch::matmul(q.select(2, 1).unsqueeze(2), k.narrow(2, 0, 2).transpose(-2, -1)) * 0.35).softmax(-1);
  const auto row1 = torch::matmul(p, v.narrow(2, 0, 2)).squeeze(2);
  EXPECT_TRUE(torch::allclose(out.select(2, 1).to(torch::kFloat), row1, 3e-2, 3e-2));
}

TEST(FusedAttention, ACausalCallTakesNoBias) {
  const auto t = torch::zeros({1, 1, 2, 4});
  try {
    sdpaAttention(AttentionKind::kCausalSelf, t, t, t, torch::zeros({1, 1, 2, 2}), true, 1.0, 0.0);
    ADD_FAILURE() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("a causal call takes no bias"), std::string::npos) << e.what();
  }
}

// NOTE [Fused attention]: attention dropout on the SDPA path is SDPA's own
// draw, from the default generator: reproducible from the seed, off in eval.
TEST(FusedAttention, AttentionDropoutOnSdpaIsReproducibleFromTheSeed) {
  auto options = testing::tinyOptions("opt");
  options.lm().attention_dropout(0.5);
  torch::manual_seed(3);
  Flamingo model(options);
  testing::setGates(model);
  const auto batch = testing::tinyBatch(options, 4);
  ScopedSdpaOnCpu on({AttentionKind::kCausalSelf});
  CpuSdpaBackend math(false);
  const auto logits = [&](uint64_t seed) {
    torch::NoGradGuard no_grad;
    torch::manual_seed(seed);
    return model->forward(batch.vision_x, batch.input_ids, batch.attention_mask);
  };
  const auto a = logits(7);
  EXPECT_TRUE(torch::equal(a, logits(7)));
  EXPECT_FALSE(torch::allclose(a, logits(8)));
  model->eval();
  const auto evaluated = logits(7);
  EXPECT_FALSE(torch::allclose(a, evaluated));
  {
    // In eval the SDPA path equals the kernels' (no dropout anywhere).
    ScopedSdpaOnCpu kernels(std::vector<AttentionKind>{});
    torch::NoGradGuard no_grad;
    const auto want = model->forward(batch.vision_x, batch.input_ids, batch.attention_mask);
    EXPECT_LE(testing::maxRelative(evaluated, want, 1e-3), kTolerance);
  }
}

}  // namespace
}  // namespace fs::model
