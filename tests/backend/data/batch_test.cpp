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

// NOTE [Host to device copies]: on the CPU the same tensors come back (no copy, no op); to another device
// every tensor is copied, the counts and names kept.
TEST(ToDevice, OnItsOwnDeviceTheBatchIsNotCopied) {
  const Batch b = valid(DatasetKind::kMmc4, 2);
  const Batch same = toDevice(b, torch::Device(torch::kCPU));
  EXPECT_TRUE(same.images.is_same(b.images));
  EXPECT_TRUE(same.inputIds.is_same(b.inputIds));
  EXPECT_TRUE(same.attentionMask.is_same(b.attentionMask));
  EXPECT_TRUE(toDevice(b.inputIds, torch::Device(torch::kCPU)).is_same(b.inputIds));
  EXPECT_FALSE(toDevice(torch::Tensor(), torch::Device(torch::kMeta)).defined());
}

TEST(ToDevice, ToAnotherDeviceEveryTensorMoves) {
  const Batch b = valid(DatasetKind::kMmc4, 2);
  const Batch moved = toDevice(b, torch::Device(torch::kMeta));
  for (const torch::Tensor* t : {&moved.images, &moved.inputIds, &moved.attentionMask}) {
    EXPECT_TRUE(t->is_meta());
  }
  EXPECT_EQ(moved.images.sizes(), b.images.sizes());
  EXPECT_EQ(moved.inputIds.scalar_type(), torch::kInt64);
  EXPECT_EQ(moved.dataset, b.dataset);
  EXPECT_EQ(moved.samples, b.samples);
  EXPECT_EQ(moved.kind, b.kind);
  EXPECT_TRUE(b.images.device().is_cpu());  // the host batch stays
}

}  // namespace
}  // namespace fs::data
