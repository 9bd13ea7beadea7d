// NOTE [Skipped padding]: with Padding::kSkip the model computes token-wise
// work on the real tokens only. Real positions must get the logits, and
// every parameter the gradients, that computing the padding gives (float
// summation order aside), for every LM family, with and without gradient
// checkpointing; the padding's own logits are zeros.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "backend/model/common.h"
#include "backend/model/gated_cross_attention.h"
#include "tiny_model.h"

namespace fs::model {
namespace {

struct Result {
  torch::Tensor logits;
  std::vector<std::pair<std::string, torch::Tensor>> grads;
};

// wide: 16 x 64 cross-attention heads and no row with more <image> tokens
// than slots, so that with padding skipped the gated blocks take NOTE
// [Attending tokens] and NOTE [Slot attention] (leaving 13 positions out
// pays: 13 x 32 x 1024 >= 2^18), and with padding computed the masked path.
// hostSets: the index sets computed beforehand (Flamingo::indexSets) and given to the forward, as the
// trainer does (NOTE [Index sets from the host] in common.h).
Result run(const std::string& variant, bool checkpointing, Padding padding, bool wide = false,
           bool hostSets = false) {
  auto options = testing::tinyOptions(variant);
  options.gradient_checkpointing(checkpointing);
  if (wide) options.cross_attn().heads(16).head_dim(64);
  torch::manual_seed(3);
  Flamingo model(options);
  testing::setGates(model);
  model->freezeAsOpenFlamingo();
  auto batch = testing::tinyBatch(options, 4);
  // A third row with more padding than text.
  batch.input_ids = torch::cat(
      {batch.input_ids, testing::longTensor({{options.image_id(), 30, 31, 1, 1, 1, 1, 1, 1, 1, 1, 1}})});
  batch.attention_mask =
      torch::cat({batch.attention_mask, testing::longTensor({{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}})});
  batch.vision_x = torch::cat({batch.vision_x, batch.vision_x.narrow(0, 0, 1)});
  if (wide) batch.input_ids[1][6] = 25;  // row 1's third <image>: two slots, two images
  if (wide) {
    // The two paths this comparison is about.
    const auto text_time = mediaTextTime(batch.input_ids, options.image_id());
    const int64_t work = options.cross_attn().dim() * 16 * 64;
    EXPECT_EQ(attendingTokens(
                  text_time,
                  padding == Padding::kSkip ? realTokenIndex(batch.attention_mask) : torch::Tensor(), 2, work)
                  .defined(),
              padding == Padding::kSkip);
  }
  Result r;
  const IndexSets sets =
      model->indexSets(batch.input_ids, batch.attention_mask, batch.vision_x.size(1), padding);
  if (hostSets && wide && padding == Padding::kSkip) {
    EXPECT_TRUE(sets.realTokens.defined() && sets.attending.defined())
        << "the paths under test are not taken";
  }
  r.logits = model->forward(batch.vision_x, batch.input_ids, batch.attention_mask, padding,
                            hostSets ? &sets : nullptr);
  // A loss over the real positions only, as the labels make it.
  torch::manual_seed(9);
  const auto weights = torch::randn_like(r.logits) * batch.attention_mask.unsqueeze(-1).to(torch::kFloat);
  (r.logits * weights).sum().backward();
  for (const auto& [name, p] : model->namedParameters()) {
    if (p.requires_grad())
      r.grads.emplace_back(name, p.grad().defined() ? p.grad().clone() : torch::Tensor());
  }
  r.logits = r.logits.detach();
  return r;
}

class SkipPadding : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(SkipPadding, RealPositionsAndGradientsMatchComputingThePadding) {
  const auto& [variant, checkpointing] = GetParam();
  const Result full = run(variant, checkpointing, Padding::kCompute);
  const Result skip = run(variant, checkpointing, Padding::kSkip);
  auto mask = testing::tinyBatch(testing::tinyOptions(variant), 4).attention_mask;
  mask = torch::cat({mask, testing::longTensor({{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}})});
  const auto real = mask.ne(0).unsqueeze(-1).expand_as(full.logits);
  EXPECT_TRUE(torch::allclose(full.logits.masked_select(real), skip.logits.masked_select(real), 1e-5, 1e-6))
      << (full.logits - skip.logits).masked_select(real).abs().max().item<double>();
  EXPECT_EQ(skip.logits.masked_select(real.logical_not()).abs().max().item<double>(), 0.0);
  ASSERT_EQ(full.grads.size(), skip.grads.size());
  for (size_t i = 0; i < full.grads.size(); ++i) {
    const auto& [name, g] = full.grads[i];
    ASSERT_EQ(g.defined(), skip.grads[i].second.defined()) << name;
    if (!g.defined()) continue;
    const double scale = std::max(1e-3, g.abs().max().item<double>());
    EXPECT_LE((g - skip.grads[i].second).abs().max().item<double>(), 1e-5 * scale) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SkipPadding,
                         ::testing::Combine(::testing::ValuesIn(testing::variants()), ::testing::Bool()),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param) + (std::get<1>(info.param) ? "_ckpt" : "");
                           for (auto& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

// NOTE [Slot attention] in the whole model: the packed attending tokens'
// logits and every gradient against the masked path's.
TEST(SkipPadding, SlotAttentionMatchesTheMaskedCrossAttention) {
  for (const bool checkpointing : {false, true}) {
    const Result full = run("opt", checkpointing, Padding::kCompute, /*wide=*/true);
    const Result skip = run("opt", checkpointing, Padding::kSkip, /*wide=*/true);
    auto mask = testing::tinyBatch(testing::tinyOptions("opt"), 4).attention_mask;
    mask = torch::cat({mask, testing::longTensor({{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}})});
    const auto real = mask.ne(0).unsqueeze(-1).expand_as(full.logits);
    EXPECT_TRUE(torch::allclose(full.logits.masked_select(real), skip.logits.masked_select(real), 1e-5, 1e-6))
        << (full.logits - skip.logits).masked_select(real).abs().max().item<double>();
    ASSERT_EQ(full.grads.size(), skip.grads.size());
    for (size_t i = 0; i < full.grads.size(); ++i) {
      const auto& [name, g] = full.grads[i];
      ASSERT_TRUE(g.defined() && skip.grads[i].second.defined()) << name;
      const double scale = std::max(1e-3, g.abs().max().item<double>());
      EXPECT_LE((g - skip.grads[i].second).abs().max().item<double>(), 1e-5 * scale)
          << name << (checkpointing ? " (checkpointing)" : "");
    }
  }
}

// NOTE [Index sets from the host]: given the sets it would pick, the forward computes the same numbers.
TEST(SkipPadding, IndexSetsGivenByTheCallerGiveTheSameResult) {
  for (const bool checkpointing : {false, true}) {
    for (const Padding padding : {Padding::kSkip, Padding::kCompute}) {
      const Result own = run("opt", checkpointing, padding, /*wide=*/true);
      const Result given = run("opt", checkpointing, padding, /*wide=*/true, /*hostSets=*/true);
      EXPECT_TRUE(torch::equal(own.logits, given.logits)) << (checkpointing ? "checkpointing" : "");
      ASSERT_EQ(own.grads.size(), given.grads.size());
      for (size_t i = 0; i < own.grads.size(); ++i) {
        ASSERT_EQ(own.grads[i].second.defined(), given.grads[i].second.defined()) << own.grads[i].first;
        if (own.grads[i].second.defined())
          EXPECT_TRUE(torch::equal(own.grads[i].second, given.grads[i].second)) << own.grads[i].first;
      }
    }
  }
}

TEST(SkipPadding, NoPaddingMeansNothingToSkip) {
  EXPECT_FALSE(realTokenIndex(torch::ones({2, 5}, torch::kLong)).defined());
  const auto index = realTokenIndex(testing::longTensor({{1, 1, 0}, {1, 0, 0}}));
  EXPECT_TRUE(torch::equal(index, torch::tensor({0, 1, 3}, torch::kLong)));
}

}  // namespace
}  // namespace fs::model
