#include "backend/train/embedding_mask.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace fs::train {
namespace {

TEST(EmbeddingMask, OnlyTheAddedTokenRowsKeepTheirGradient) {
  auto weight = torch::randn({6, 3}).set_requires_grad(true);
  const auto ids = torch::tensor({{0, 4, 5, 2}}, torch::kInt64);
  torch::embedding(weight, ids).pow(2).sum().backward();
  const auto before = weight.grad().clone();
  maskEmbeddingGrad(weight, {5, 4});  // <image>, <|endofchunk|>
  for (int64_t r = 0; r < 6; ++r) {
    if (r == 4 || r == 5) {
      EXPECT_TRUE(torch::equal(weight.grad()[r], before[r])) << r;
      EXPECT_GT(weight.grad()[r].abs().sum().item<float>(), 0.0f);
    } else {
      EXPECT_EQ(weight.grad()[r].abs().sum().item<float>(), 0.0f) << r;
    }
  }
}

TEST(EmbeddingMask, NoGradientIsANoOpAndRowsAreChecked) {
  auto weight = torch::randn({4, 2}).set_requires_grad(true);
  maskEmbeddingGrad(weight, {1});
  EXPECT_FALSE(weight.grad().defined());
  EXPECT_THROW(embeddingRowMask(4, {4}, torch::kFloat32, torch::kCPU), c10::Error);
  const auto mask = embeddingRowMask(4, {0, 3}, torch::kBFloat16, torch::kCPU);
  EXPECT_EQ(mask.sizes(), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(mask.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(mask.sum().item<float>(), 2.0f);
}

TEST(EmbeddingMask, MatchesTheReferenceMultiplication) {
  // grad * mask (NaN stays NaN in a masked row, as the reference's multiply).
  auto weight = torch::zeros({3, 2}).set_requires_grad(true);
  weight.mutable_grad() = torch::tensor({{1.0f, NAN}, {2.0f, 3.0f}, {4.0f, 5.0f}});
  maskEmbeddingGrad(weight, {2});
  EXPECT_TRUE(std::isnan(weight.grad()[0][1].item<float>()));
  EXPECT_EQ(weight.grad()[1][0].item<float>(), 0.0f);
  EXPECT_EQ(weight.grad()[2][1].item<float>(), 5.0f);
}

}  // namespace
}  // namespace fs::train
