// NOTE [Logits at the targets] (backend/model/output_head.h) and NOTE [Dead
// positions] (backend/step/labels.h): the trainer's forward and loss
// (toDeviceForForward + forwardLossOn), which computes logits at the targets
// only, a tied head's weight gradient on the masked rows only, and skips the
// positions after each row's last target with the padding, must give the
// loss and, after the embedding row mask, every gradient that computing
// every position and every logit gives (float summation order aside): every
// LM family (tied and untied heads), with and without gradient
// checkpointing, on LAION and MMC4 batches with padding and dead positions.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "backend/data/batch.h"
#include "backend/data/special_tokens.h"
#include "backend/model/common.h"
#include "backend/model/flamingo.h"
#include "backend/step/labels.h"
#include "backend/step/loss.h"
#include "backend/trainer/device_batch.h"
#include "tests/backend/model/tiny_model.h"

namespace fs::trainer {
namespace {

namespace testing = model::testing;

struct Result {
  double loss = 0.0;
  int64_t targets = 0;
  model::Padding padding = model::Padding::kCompute;
  torch::Tensor forwardMask;
  std::vector<std::pair<std::string, torch::Tensor>> grads;
};

data::SpecialTokenIds tokensOf(const model::FlamingoOptions& o) {
  return {o.vocab_size(), 2, 1, o.image_id(), o.endofchunk_id()};
}

// Row 0 ends "... <|endofchunk|> eos" (MMC4: both dead); row 1 ends "23 eos" and right padding.
data::Batch hostBatch(const model::FlamingoOptions& o, data::DatasetKind kind) {
  const auto tiny = testing::tinyBatch(o, 4);
  data::Batch b;
  b.dataset = kind == data::DatasetKind::kLaion ? "laion" : "mmc4";
  b.kind = kind;
  b.images = tiny.vision_x;
  b.inputIds = tiny.input_ids;
  b.attentionMask = tiny.attention_mask;
  b.samples = b.inputIds.size(0);
  b.tokens = b.attentionMask.sum().item<int64_t>();
  return b;
}

// lm_width: the width paddingFor weighs the skipped positions with (4096 makes skipping pay on this
// small batch); select false: every position's logits and no skipping (the reference's way).
Result run(const std::string& variant, bool checkpointing, data::DatasetKind kind, bool select,
           int64_t lm_width, bool autocast = false) {
  auto options = testing::tinyOptions(variant);
  options.gradient_checkpointing(checkpointing);
  torch::manual_seed(3);
  model::Flamingo model(options);
  testing::setGates(model);
  model->freezeAsOpenFlamingo();
  const data::SpecialTokenIds tokens = tokensOf(options);
  const data::Batch host = hostBatch(options, kind);
  const torch::Tensor labels = step::makeLabels(kind, host.inputIds, tokens);
  const DeviceBatch d =
      toDeviceForForward(*model, host, labels, tokens.pad, lm_width, false, torch::kCPU, select);
  EXPECT_EQ(d.select.positions.defined(), select);
  step::LmLoss loss;
  {
    testing::CpuAutocast bf16(autocast);
    loss = forwardLossOn(*model, d, torch::kFloat32);
  }
  loss.loss.backward();
  model->maskEmbeddingGradient();
  Result r;
  r.loss = loss.loss.item<double>();
  r.targets = loss.targets;
  r.padding = d.padding;
  r.forwardMask = d.batch.attentionMask;
  for (const auto& [name, p] : model->namedParameters()) {
    if (p.requires_grad())
      r.grads.emplace_back(name, p.grad().defined() ? p.grad().clone() : torch::Tensor());
  }
  return r;
}

void expectSameGradients(const Result& full, const Result& sel, const std::string& what,
                         double tolerance = 1e-5) {
  ASSERT_EQ(full.grads.size(), sel.grads.size()) << what;
  for (size_t i = 0; i < full.grads.size(); ++i) {
    const auto& [name, g] = full.grads[i];
    ASSERT_EQ(g.defined(), sel.grads[i].second.defined()) << what << " " << name;
    if (!g.defined()) continue;
    const double scale = std::max(1e-3, g.abs().max().item<double>());
    EXPECT_LE((g - sel.grads[i].second).abs().max().item<double>(), tolerance * scale) << what << " " << name;
  }
}

class LogitsAtTargets : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(LogitsAtTargets, LossAndMaskedGradientsMatchComputingEveryLogit) {
  const auto& [variant, checkpointing] = GetParam();
  for (const auto kind : {data::DatasetKind::kLaion, data::DatasetKind::kMmc4}) {
    const std::string what = variant + (kind == data::DatasetKind::kLaion ? " laion" : " mmc4");
    const Result full = run(variant, checkpointing, kind, false, 4096);
    ASSERT_EQ(full.padding, model::Padding::kCompute) << what;
    // Skipping pays: padding and the dead positions are left out.
    const Result skip = run(variant, checkpointing, kind, true, 4096);
    ASSERT_EQ(skip.padding, model::Padding::kSkip) << what;
    // Skipping does not pay: logits at the targets only, every position computed.
    const Result compute = run(variant, checkpointing, kind, true, 32);
    ASSERT_EQ(compute.padding, model::Padding::kCompute) << what;
    for (const Result* sel : {&skip, &compute}) {
      EXPECT_EQ(sel->targets, full.targets) << what;
      EXPECT_NEAR(sel->loss, full.loss, 1e-6 * std::abs(full.loss)) << what;
      expectSameGradients(full, *sel, what);
    }
    EXPECT_TRUE(torch::equal(compute.forwardMask, full.forwardMask)) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, LogitsAtTargets,
                         ::testing::Combine(::testing::ValuesIn(testing::variants()), ::testing::Bool()),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param) + (std::get<1>(info.param) ? "_ckpt" : "");
                           for (auto& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

// Under bf16 autocast the head's products run in bf16 and its gradients return in float32, as autograd's
// casts around linear take them (the FSDP mixed-precision runs train through this).
TEST(LogitsAtTargets, Bf16AutocastGivesTheLossAndGradientsOfEveryLogit) {
  for (const std::string variant : {"opt", "llama"}) {
    const Result full = run(variant, false, data::DatasetKind::kMmc4, false, 4096, true);
    const Result sel = run(variant, false, data::DatasetKind::kMmc4, true, 4096, true);
    ASSERT_EQ(sel.padding, model::Padding::kSkip);
    EXPECT_NEAR(sel.loss, full.loss, 1e-2 * std::abs(full.loss)) << variant;
    expectSameGradients(full, sel, variant + " bf16", 5e-2);
    // Every gradient comes back in the parameters' float32.
    for (const auto& [name, g] : sel.grads) {
      if (g.defined()) EXPECT_EQ(g.scalar_type(), torch::kFloat32) << name;
    }
  }
}

// The positions left out are exactly the dead ones: after each row's last target, padding included.
TEST(LogitsAtTargets, TheForwardMaskLeavesOutThePositionsAfterEachRowsLastTarget) {
  const Result laion = run("opt", false, data::DatasetKind::kLaion, true, 4096);
  // LAION row 0: the eos (index 11) is the last target, so only it is dead; row 1: its eos (8) and padding.
  EXPECT_TRUE(torch::equal(laion.forwardMask, testing::longTensor({{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
                                                                   {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}})));
  // MMC4 row 0: the final <|endofchunk|> (10) is the last target; it and the eos after it are dead.
  const Result mmc4 = run("opt", false, data::DatasetKind::kMmc4, true, 4096);
  EXPECT_TRUE(torch::equal(mmc4.forwardMask, testing::longTensor({{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0},
                                                                  {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}})));
}

// A tied head's weight gradient is computed on the rows the mask keeps; an untied (frozen) head has none.
TEST(LogitsAtTargets, ATiedHeadsWeightGradientHasOnlyTheMaskedRows) {
  const auto options = testing::tinyOptions("opt");
  torch::manual_seed(5);
  const auto hidden = torch::randn({7, options.lm().width()}).requires_grad_(true);
  const auto weight = torch::randn({options.vocab_size(), options.lm().width()}).requires_grad_(true);
  const auto rows = torch::tensor({options.image_id(), options.endofchunk_id()}, torch::kLong);
  const auto upstream = torch::randn({7, options.vocab_size()});
  const auto masked = model::headLogits(hidden, weight, rows);
  const auto plain = torch::linear(hidden, weight);
  EXPECT_TRUE(torch::equal(masked, plain));
  const auto grads = torch::autograd::grad({masked}, {hidden, weight}, {upstream});
  const auto expected = torch::autograd::grad({plain}, {hidden, weight}, {upstream});
  EXPECT_TRUE(torch::allclose(grads[0], expected[0], 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(grads[1].index_select(0, rows), expected[1].index_select(0, rows), 1e-6, 1e-6));
  auto others = torch::ones({options.vocab_size()}, torch::kBool);
  others.index_fill_(0, rows, false);
  EXPECT_EQ(grads[1].index({others}).abs().max().item<double>(), 0.0);
  // Without rows (the parity tests' unmasked gradients): every row, as linear's.
  const auto all =
      torch::autograd::grad({model::headLogits(hidden, weight, torch::Tensor())}, {weight}, {upstream});
  EXPECT_TRUE(torch::equal(all[0], expected[1]));
}

}  // namespace
}  // namespace fs::trainer
