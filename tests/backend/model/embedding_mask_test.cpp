// The input-embedding gradient row mask (moved here from backend/step: the
// model owns the token ids, so it owns the one implementation).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "tiny_model.h"

namespace fs::model {
namespace {

using testing::buildTiny;
using testing::tinyOptions;

TEST(EmbeddingMask, OnlyTheAddedTokenRowsKeepTheirGradient) {
  Flamingo m = buildTiny();
  auto& weight = m->inputEmbedding()->weight;
  const int64_t image = m->options().image_id(), eoc = m->options().endofchunk_id();
  const auto ids = torch::tensor({int64_t{0}, eoc, image, int64_t{2}}, torch::kInt64).unsqueeze(0);
  torch::embedding(weight, ids).pow(2).sum().backward();
  const auto before = weight.grad().clone();
  m->maskEmbeddingGradient();
  for (int64_t r = 0; r < weight.size(0); ++r) {
    if (r == image || r == eoc) {
      EXPECT_TRUE(torch::equal(weight.grad()[r], before[r])) << r;
      EXPECT_GT(weight.grad()[r].abs().sum().item<float>(), 0.0f);
    } else {
      EXPECT_EQ(weight.grad()[r].abs().sum().item<float>(), 0.0f) << r;
    }
  }
}

TEST(EmbeddingMask, NoGradientIsANoOpAndRowsAreChecked) {
  Flamingo m = buildTiny();
  m->inputEmbedding()->weight.mutable_grad() = torch::Tensor();
  m->maskEmbeddingGradient();
  EXPECT_FALSE(m->inputEmbedding()->weight.grad().defined());
  const auto mask = m->embeddingGradientRowMask();
  EXPECT_EQ(mask.sizes(), (std::vector<int64_t>{m->inputEmbedding()->weight.size(0), 1}));
  EXPECT_EQ(mask.scalar_type(), m->inputEmbedding()->weight.scalar_type());
  EXPECT_EQ(mask.sum().item<float>(), 2.0f);
  auto options = tinyOptions();
  options.image_id(options.vocab_size());  // one past the last row
  EXPECT_THROW(
      {
        Flamingo bad(options);
        bad->embeddingGradientRowMask();
      },
      c10::Error);
}

TEST(EmbeddingMask, MatchesTheReferenceMultiplication) {
  // grad * mask (NaN stays NaN in a masked row, as the reference's multiply).
  Flamingo m = buildTiny();
  auto& weight = m->inputEmbedding()->weight;
  const int64_t image = m->options().image_id();
  auto grad = torch::ones_like(weight);
  grad[0][1] = NAN;
  grad[image][1] = 5.0f;
  weight.mutable_grad() = grad;
  m->maskEmbeddingGradient();
  EXPECT_TRUE(std::isnan(weight.grad()[0][1].item<float>()));
  EXPECT_EQ(weight.grad()[1][0].item<float>(), 0.0f);
  EXPECT_EQ(weight.grad()[image][1].item<float>(), 5.0f);
}

}  // namespace
}  // namespace fs::model
