// Media masking of the gated cross-attention (NOTE [Media masking]), the
// resampler and the vision tower's shapes.
#include "backend/model/gated_cross_attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "backend/model/perceiver.h"
#include "backend/model/vision_encoder.h"

namespace fs::model {
namespace {

constexpr int64_t kImage = 9;
constexpr int64_t kLatents = 3;  // n latents per image

torch::Tensor tokens(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return torch::tensor(flat, torch::kLong).view({static_cast<int64_t>(rows.size()), -1});
}

struct Fixture {
  MaskedCrossAttention attn{nullptr};
  torch::Tensor media;  // (1, T_img, n, 8)
  torch::Tensor x;      // (1, L, 16)
};

Fixture make(int64_t images, int64_t length) {
  torch::manual_seed(3);
  Fixture f;
  f.attn = MaskedCrossAttention(GatedCrossAttentionOptions(16, 8).heads(2).head_dim(4));
  f.media = torch::randn({1, images, kLatents, 8});
  f.x = torch::randn({1, length, 16});
  return f;
}

// Columns of image j (1-based) in the flattened media axis.
torch::Tensor columns(const torch::Tensor& weights, int64_t image) {
  return weights.narrow(-1, (image - 1) * kLatents, kLatents);
}

TEST(MediaTextTime, CountsImageTokensIncludingTheImageTokenItself) {
  const auto ids = tokens({{1, kImage, 2, 3, kImage, 4}});
  EXPECT_TRUE(torch::equal(mediaTextTime(ids, kImage), tokens({{0, 1, 1, 1, 2, 2}})));
}

TEST(MaskedCrossAttention, NoImageYetGivesZeroRowsAndZeroOutput) {
  auto f = make(1, 4);
  const auto ids = tokens({{1, 2, 3, 4}});
  const auto tt = mediaTextTime(ids, kImage);
  EXPECT_TRUE(torch::equal(f.attn->attentionWeights(f.x, f.media, tt), torch::zeros({1, 2, 4, kLatents})));
  EXPECT_TRUE(torch::equal(f.attn->forward(f.x, f.media, tt), torch::zeros({1, 4, 16})));
}

TEST(MaskedCrossAttention, TwoImagesEachPositionSeesOnlyItsImage) {
  auto f = make(2, 6);
  const auto ids = tokens({{1, kImage, 2, 3, kImage, 4}});
  const auto w = f.attn->attentionWeights(f.x, f.media, mediaTextTime(ids, kImage));  // (1, H, 6, 2n)
  // Position 0: before any image.
  EXPECT_EQ(w.select(2, 0).abs().sum().item<double>(), 0.0);
  for (int64_t i = 1; i < 6; ++i) {
    const int64_t own = i < 4 ? 1 : 2;
    const int64_t other = 3 - own;
    const auto row = w.select(2, i);
    EXPECT_EQ(columns(row, other).abs().sum().item<double>(), 0.0) << "position " << i;
    EXPECT_TRUE(torch::allclose(columns(row, own).sum(-1), torch::ones({1, 2}))) << "position " << i;
    EXPECT_GT(columns(row, own).min().item<double>(), 0.0) << "position " << i;
  }
}

TEST(MaskedCrossAttention, ImageAsTheLastTokenAttendsToItsOwnImage) {
  auto f = make(1, 3);
  const auto ids = tokens({{1, 2, kImage}});
  const auto w = f.attn->attentionWeights(f.x, f.media, mediaTextTime(ids, kImage));
  EXPECT_EQ(w.narrow(2, 0, 2).abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(torch::allclose(w.select(2, 2).sum(-1), torch::ones({1, 2})));
}

TEST(MaskedCrossAttention, TextTimeBeyondTheImagesAttendsUniformly) {
  // Three <image> tokens but two images: the last positions are fully masked,
  // so (masked with -finfo.max, not -inf) they spread evenly over every latent.
  auto f = make(2, 5);
  const auto ids = tokens({{kImage, 1, kImage, kImage, 2}});
  const auto w = f.attn->attentionWeights(f.x, f.media, mediaTextTime(ids, kImage));
  const auto uniform = torch::full({1, 2, 2 * kLatents}, 1.0 / (2 * kLatents));
  EXPECT_TRUE(torch::allclose(w.select(2, 3), uniform));
  EXPECT_TRUE(torch::allclose(w.select(2, 4), uniform));
  EXPECT_FALSE(torch::any(torch::isnan(w)).item<bool>());
  // Position 2 (second image) is an ordinary row.
  EXPECT_EQ(columns(w.select(2, 2), 1).abs().sum().item<double>(), 0.0);
}

// NOTE [Attending tokens]
TEST(AttendingTokens, EveryPositionAttendingMeansNothingToPack) {
  const auto tt = mediaTextTime(tokens({{kImage, 2, 3}, {kImage, 4, kImage}}), kImage);
  EXPECT_FALSE(attendingTokens(tt, {}, 2).defined());
}

TEST(AttendingTokens, TextBeforeTheFirstImageAndPaddingAreLeftOut) {
  // Row 0: two words before the image. Row 1: image, word, then two padded positions.
  const auto tt = mediaTextTime(tokens({{1, 2, kImage, 3}, {kImage, 4, 0, 0}}), kImage);
  EXPECT_TRUE(torch::equal(attendingTokens(tt, {}, 1), torch::tensor({2, 3, 4, 5, 6, 7}, torch::kLong)));
  const auto real = torch::tensor({0, 1, 2, 3, 4, 5}, torch::kLong);
  EXPECT_TRUE(torch::equal(attendingTokens(tt, real, 1), torch::tensor({2, 3, 4, 5}, torch::kLong)));
}

TEST(AttendingTokens, MoreImageTokensThanSlotsKeepsEveryPosition) {
  // The third <image> of a row with two slots: its text attends uniformly to every slot.
  const auto tt = mediaTextTime(tokens({{1, kImage, kImage, kImage, 5}}), kImage);
  EXPECT_FALSE(attendingTokens(tt, {}, 2).defined());
  // Only real tokens count: beyond the slots on padding alone, the rest is packed.
  const auto real = torch::tensor({0, 1, 2}, torch::kLong);
  EXPECT_TRUE(torch::equal(attendingTokens(tt, real, 2), torch::tensor({1, 2}, torch::kLong)));
}

TEST(MaskedCrossAttention, PackedToTheAttendingTokensGivesTheSameResultThere) {
  auto f = make(2, 6);
  const auto tt = mediaTextTime(tokens({{1, kImage, 2, 3, kImage, 4}}), kImage);
  const auto attending = attendingTokens(tt, torch::tensor({0, 1, 2, 3, 4}, torch::kLong), 2);
  ASSERT_TRUE(torch::equal(attending, torch::tensor({1, 2, 3, 4}, torch::kLong)));
  const auto all = f.attn->forward(f.x, f.media, tt);
  const auto packed = f.attn->forward(f.x, f.media, tt, attending);
  EXPECT_TRUE(torch::allclose(packed.narrow(1, 1, 4), all.narrow(1, 1, 4), 1e-6, 1e-7));
  EXPECT_TRUE(torch::equal(packed.select(1, 0), torch::zeros({1, 16})));  // text before any image
  EXPECT_TRUE(torch::equal(packed.select(1, 5), torch::zeros({1, 16})));  // not a real token
}

// NOTE [Slot attention]: the packed path's gradients (x, media, every
// weight) equal the masked path's when only the attending positions count.
TEST(MaskedCrossAttention, PackedSlotAttentionGivesTheMaskedPathsGradients) {
  // Row 0: text, image 1, text, image 2, text. Row 1: image 1, text, then padding (not real).
  const auto ids = tokens({{1, kImage, 2, 3, kImage, 4}, {kImage, 5, 6, 0, 0, 0}});
  const auto tt = mediaTextTime(ids, kImage);
  const auto real = torch::tensor({0, 1, 2, 3, 4, 5, 6, 7, 8}, torch::kLong);
  const auto attending = attendingTokens(tt, real, 2);
  ASSERT_TRUE(torch::equal(attending, torch::tensor({1, 2, 3, 4, 5, 6, 7, 8}, torch::kLong)));
  auto keep = torch::zeros({12}, torch::kFloat);
  keep.index_fill_(0, attending, 1.0f);
  struct Out {
    torch::Tensor y, dx, dmedia;
    std::vector<torch::Tensor> dw;
  };
  const auto run = [&](bool packed) {
    torch::manual_seed(3);
    MaskedCrossAttention attn(GatedCrossAttentionOptions(16, 8).heads(2).head_dim(4));
    auto x = torch::randn({2, 6, 16}, torch::requires_grad());
    auto media = torch::randn({2, 2, kLatents, 8}, torch::requires_grad());
    Out o;
    o.y = packed ? attn->forward(x, media, tt, attending) : attn->forward(x, media, tt);
    torch::manual_seed(4);
    (o.y * torch::randn_like(o.y) * keep.view({2, 6, 1})).sum().backward();
    o.dx = x.grad();
    o.dmedia = media.grad();
    for (const auto& p : attn->parameters()) o.dw.push_back(p.grad());
    return o;
  };
  const auto packed = run(true);
  const auto dense = run(false);
  const auto at = [&](const torch::Tensor& t) { return t.reshape({12, -1}).index_select(0, attending); };
  EXPECT_TRUE(torch::allclose(at(packed.y), at(dense.y), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(packed.dx, dense.dx, 1e-5, 1e-6)) << (packed.dx - dense.dx).abs().max();
  EXPECT_TRUE(torch::allclose(packed.dmedia, dense.dmedia, 1e-5, 1e-6))
      << (packed.dmedia - dense.dmedia).abs().max();
  ASSERT_EQ(packed.dw.size(), dense.dw.size());
  for (size_t i = 0; i < packed.dw.size(); ++i) {
    EXPECT_TRUE(torch::allclose(packed.dw[i], dense.dw[i], 1e-5, 1e-6)) << i;
  }
}

TEST(GatedCrossAttentionBlock, GatesStartAtZeroSoTheBlockIsTheIdentity) {
  torch::manual_seed(4);
  GatedCrossAttentionBlock block(GatedCrossAttentionOptions(16, 8).heads(2).head_dim(4).ff_mult(2));
  EXPECT_EQ(block->attn_gate.sizes(), torch::IntArrayRef({1}));
  EXPECT_EQ(block->attn_gate.item<double>(), 0.0);
  EXPECT_EQ(block->ff_gate.item<double>(), 0.0);
  const auto x = torch::randn({1, 4, 16});
  const auto ids = tokens({{kImage, 1, 2, 3}});
  EXPECT_TRUE(
      torch::equal(block->forward(x, torch::randn({1, 1, kLatents, 8}), mediaTextTime(ids, kImage)), x));
  {
    torch::NoGradGuard no_grad;
    block->attn_gate.fill_(1.0);
  }
  EXPECT_FALSE(
      torch::equal(block->forward(x, torch::randn({1, 1, kLatents, 8}), mediaTextTime(ids, kImage)), x));
}

TEST(PerceiverResampler, ResamplesEachImageToTheLatents) {
  torch::manual_seed(5);
  PerceiverResampler p(PerceiverOptions(8).depth(2).heads(2).head_dim(4).num_latents(5).ff_mult(2));
  const auto out = p->forward(torch::randn({2, 3, 1, 7, 8}));
  EXPECT_EQ(out.sizes(), torch::IntArrayRef({2, 3, 5, 8}));
  // Images are resampled independently: changing image 1 leaves image 0 alone.
  auto features = torch::randn({1, 2, 1, 7, 8});
  const auto a = p->forward(features);
  features.select(1, 1).add_(1.0);
  const auto b = p->forward(features);
  EXPECT_TRUE(torch::equal(a.select(1, 0), b.select(1, 0)));
  EXPECT_FALSE(torch::equal(a.select(1, 1), b.select(1, 1)));
}

TEST(VisionEncoder, ReturnsPatchTokensWithoutTheClassToken) {
  const auto opts =
      VisionEncoderOptions().image_size(32).patch_size(8).width(16).layers(1).heads(2).output_dim(12);
  torch::manual_seed(6);
  VisionEncoder tower(opts);
  torch::manual_seed(6);
  VisionEncoder later(VisionEncoderOptions(opts).ln_post_on_tokens(true));  // open_clip >= 2.23
  const auto images = torch::randn({3, 3, 32, 32});
  const auto tokens = tower->forward(images);
  EXPECT_EQ(tokens.sizes(), torch::IntArrayRef({3, 16, 16}));
  // ln_post starts as LayerNorm with weight 1 and bias 0.
  EXPECT_TRUE(torch::allclose(later->forward(images), torch::layer_norm(tokens, {16}), 1e-5, 1e-6));
}

}  // namespace
}  // namespace fs::model
