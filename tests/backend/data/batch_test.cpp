#include "backend/data/batch.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace fs::data {
namespace {

Batch valid(DatasetKind kind, int64_t images) {
  Batch b;
  b.dataset = "d";
  b.kind = kind;
  b.samples = 2;
  b.images = torch::zeros({2, images, 1, 3, 4, 4});
  b.inputIds = torch::zeros({2, 5}, torch::kInt64);
  b.attentionMask = torch::ones({2, 5}, torch::kInt64);
  return b;
}

TEST(Batch, KindNames) {
  EXPECT_EQ(datasetKindFromString("laion"), DatasetKind::kLaion);
  EXPECT_EQ(datasetKindFromString("mmc4"), DatasetKind::kMmc4);
  EXPECT_FALSE(datasetKindFromString("c4").has_value());
  EXPECT_STREQ(toString(DatasetKind::kMmc4), "mmc4");
}

TEST(Batch, CheckAcceptsOpenFlamingoShapes) {
  EXPECT_TRUE(checkBatch(valid(DatasetKind::kLaion, 1)).isOk());
  EXPECT_TRUE(checkBatch(valid(DatasetKind::kMmc4, 6)).isOk());
}

TEST(Batch, CheckNamesTheProblem) {
  auto laionWithTwo = valid(DatasetKind::kLaion, 2);
  EXPECT_FALSE(checkBatch(laionWithTwo).isOk());
  auto fiveDims = valid(DatasetKind::kLaion, 1);
  fiveDims.images = torch::zeros({2, 1, 3, 4, 4});
  const auto st = checkBatch(fiveDims);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("(2, 1, 3, 4, 4)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'d'"), std::string::npos);
  auto intIds = valid(DatasetKind::kLaion, 1);
  intIds.inputIds = intIds.inputIds.to(torch::kInt32);
  EXPECT_FALSE(checkBatch(intIds).isOk());
  auto maskShape = valid(DatasetKind::kLaion, 1);
  maskShape.attentionMask = torch::ones({2, 4}, torch::kInt64);
  EXPECT_FALSE(checkBatch(maskShape).isOk());
  auto count = valid(DatasetKind::kLaion, 1);
  count.samples = 3;
  EXPECT_FALSE(checkBatch(count).isOk());
  Batch empty;
  EXPECT_FALSE(checkBatch(empty).isOk());
}

StepBatches twoBatches() {
  StepBatches s;
  s.batches = {valid(DatasetKind::kLaion, 1), valid(DatasetKind::kMmc4, 2)};
  s.batches[1].dataset = "mmc4";
  return s;
}

TEST(StepBatches, FindByName) {
  const StepBatches s = twoBatches();
  EXPECT_EQ(s.find("mmc4"), &s.batches[1]);
  EXPECT_EQ(s.find("missing"), nullptr);
}

}  // namespace
}  // namespace fs::data
