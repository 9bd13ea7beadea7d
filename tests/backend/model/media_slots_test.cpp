// NOTE [Unreferenced media slots]: the model encodes only the media slots some
// <image> token refers to. Logits and every gradient must equal those of
// encoding every slot (float summation order aside), with and without
// gradient checkpointing; unreferenced slots get zero media.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tiny_model.h"

namespace fs::model {
namespace {

// The tiny preset with a 128-wide vision tower: leaving one 32 px image out
// pays (16 patches x 128^2 >= 2^18, NOTE [When skipping pays]); with the
// tiny tower's width 32 it never does and every slot is encoded.
FlamingoOptions slotOptions() {
  auto c = testing::tinyConfig();
  c.vision.width = 128;
  c.vision.output_dim = 128;
  auto o = FlamingoOptions::fromConfig(c);
  o.lm().noDropout();
  return o;
}

Flamingo buildSlotModel() {
  torch::manual_seed(0);
  return Flamingo(slotOptions());
}

struct Case {
  torch::Tensor vision_x;  // (4, 3, 1, 3, H, W)
  torch::Tensor input_ids;
  torch::Tensor attention_mask;
};

// Three slots per row. Row 0: one <image>; row 1: two; row 2: four (more
// than slots: the last text attends uniformly to every slot); row 3: none.
Case slotsCase(const FlamingoOptions& o) {
  const int64_t img = o.image_id();
  const int64_t eoc = o.endofchunk_id();
  torch::manual_seed(21);
  Case c;
  const auto side = o.vision().image_size();
  c.vision_x = torch::randn({4, 3, 1, 3, side, side});
  c.input_ids = testing::longTensor({{img, 20, 21, 22, eoc, 2, 1, 1, 1, 1},
                                     {5, img, 23, eoc, img, 24, 25, eoc, 2, 1},
                                     {img, 26, img, 27, img, 28, img, 29, eoc, 2},
                                     {30, 31, 32, 33, 2, 1, 1, 1, 1, 1}});
  c.attention_mask = c.input_ids.ne(1).to(torch::kLong);
  return c;
}

struct Result {
  torch::Tensor logits;
  std::vector<std::pair<std::string, torch::Tensor>> grads;
};

Result run(bool checkpointing, bool referenced_only) {
  auto options = slotOptions();
  options.gradient_checkpointing(checkpointing);
  torch::manual_seed(3);
  Flamingo model(options);
  testing::setGates(model);
  model->freezeAsOpenFlamingo();
  const auto c = slotsCase(options);
  Result r;
  r.logits = referenced_only
                 ? model->forward(c.vision_x, c.input_ids, c.attention_mask)
                 : model->forwardWithMedia(model->encodeVision(c.vision_x), c.input_ids, c.attention_mask);
  torch::manual_seed(9);
  const auto weights = torch::randn_like(r.logits) * c.attention_mask.unsqueeze(-1).to(torch::kFloat);
  (r.logits * weights).sum().backward();
  for (const auto& [name, p] : model->namedParameters()) {
    if (p.grad().defined()) r.grads.emplace_back(name, p.grad().clone());
  }
  return r;
}

void expectSame(bool checkpointing) {
  const auto all = run(checkpointing, false);
  const auto referenced = run(checkpointing, true);
  EXPECT_TRUE(torch::allclose(all.logits, referenced.logits, 1e-5, 1e-6))
      << "max |difference| " << (all.logits - referenced.logits).abs().max().item<double>();
  ASSERT_EQ(all.grads.size(), referenced.grads.size());
  ASSERT_FALSE(all.grads.empty());
  for (size_t i = 0; i < all.grads.size(); ++i) {
    const auto& [name, g] = all.grads[i];
    EXPECT_EQ(name, referenced.grads[i].first);
    // Relative to the tensor's largest entry: summation order moves small
    // entries, and a gate's gradient is one sum over every position (2e-5 seen).
    const double scale = std::max(1e-3, g.abs().max().item<double>());
    EXPECT_LE((g - referenced.grads[i].second).abs().max().item<double>(), 1e-4 * scale) << name;
  }
}

TEST(MediaSlots, ReferencedSlotsOnlyGiveTheSameLogitsAndGradients) {
  expectSame(false);
}

TEST(MediaSlots, AlsoUnderGradientCheckpointing) {
  expectSame(true);
}

TEST(MediaSlots, UnreferencedSlotsGetZeroMediaAndReferencedOnesTheirOwn) {
  auto model = buildSlotModel();
  const auto c = slotsCase(model->options());
  torch::NoGradGuard no_grad;
  const auto all = model->encodeVision(c.vision_x);
  const auto referenced = model->encodeVision(c.vision_x, c.input_ids);
  ASSERT_EQ(all.sizes(), referenced.sizes());
  // Referenced: row 0 slot 0; row 1 slots 0-1; row 2 every slot; row 3 none.
  const std::vector<std::vector<bool>> expected = {
      {true, false, false}, {true, true, false}, {true, true, true}, {false, false, false}};
  for (int64_t b = 0; b < 4; ++b) {
    for (int64_t t = 0; t < 3; ++t) {
      const auto slot = referenced[b][t];
      if (expected[b][t]) {
        EXPECT_TRUE(torch::allclose(slot, all[b][t], 1e-5, 1e-6)) << "row " << b << " slot " << t;
      } else {
        EXPECT_TRUE(torch::equal(slot, torch::zeros_like(slot))) << "row " << b << " slot " << t;
      }
    }
  }
}

TEST(MediaSlots, EverySlotReferencedEncodesEverything) {
  auto model = buildSlotModel();
  const auto batch = testing::tinyBatch(model->options());  // both rows refer to both slots
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->encodeVision(batch.vision_x, batch.input_ids),
                           model->encodeVision(batch.vision_x)));
}

TEST(MediaSlots, WhenLeavingOutDoesNotPayEverySlotIsEncoded) {
  auto model = testing::buildTiny();  // 16 patches x 32^2 per image: below 2^18 for the 4 slots left out
  const auto c = slotsCase(model->options());
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->encodeVision(c.vision_x, c.input_ids), model->encodeVision(c.vision_x)));
}

TEST(MediaSlots, MismatchedBatchIsRefused) {
  auto model = buildSlotModel();
  const auto batch = testing::tinyBatch(model->options());
  EXPECT_THROW(model->encodeVision(batch.vision_x, batch.input_ids.narrow(0, 0, 1)), c10::Error);
}

}  // namespace
}  // namespace fs::model
