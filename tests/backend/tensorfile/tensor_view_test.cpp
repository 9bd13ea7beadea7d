#include "backend/tensorfile/tensor_view.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

namespace fs::tensorfile {
namespace {

TEST(TensorView, ExtentOfStridedLayouts) {
  EXPECT_EQ(extentElements({2, 3}, {3, 1}).value(), 6u);
  EXPECT_EQ(extentElements({3, 2}, {1, 3}).value(), 6u);  // transposed
  EXPECT_EQ(extentElements({3, 4}, {1, 0}).value(), 3u);  // expanded
  EXPECT_EQ(extentElements({}, {}).value(), 1u);          // 0-dim
  EXPECT_EQ(extentElements({0, 5}, {5, 1}).value(), 0u);
  EXPECT_FALSE(extentElements({2}, {1, 1}).isOk());
  EXPECT_FALSE(extentElements({-1}, {1}).isOk());
  EXPECT_FALSE(extentElements({1LL << 40, 1LL << 40}, {1, 1}).isOk());
  EXPECT_FALSE(extentElements({3, 2}, {1LL << 62, 1}).isOk());
}

TEST(TensorView, CopyContiguousGathersStridedElements) {
  std::vector<std::int32_t> storage(24);
  std::iota(storage.begin(), storage.end(), 0);
  TensorView v;
  v.dtype = DType::kInt32;
  v.shape = {3, 2, 2};
  v.strides = {1, 12, 3};  // a permuted view of a [2, 4, 3] block, starting at element 0
  v.bytes = std::as_bytes(std::span(storage));
  auto out = toContiguous(v);
  std::vector<std::int32_t> got(out.size() / 4);
  std::memcpy(got.data(), out.data(), out.size());
  std::vector<std::int32_t> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k) want.push_back(i + 12 * j + 3 * k);
  EXPECT_EQ(got, want);
  // Trailing contiguous block under a strided outer dimension.
  v.shape = {2, 3};
  v.strides = {6, 1};
  out = toContiguous(v);
  got.assign(out.size() / 4, 0);
  std::memcpy(got.data(), out.data(), out.size());
  EXPECT_EQ(got, (std::vector<std::int32_t>{0, 1, 2, 6, 7, 8}));
  EXPECT_FALSE(v.isContiguous());
  v.shape = {1, 3};
  v.strides = {99, 1};
  EXPECT_TRUE(v.isContiguous());
}

TEST(TensorView, DTypeNames) {
  EXPECT_EQ(torchName(DType::kBFloat16), "torch.bfloat16");
  EXPECT_EQ(safetensorsName(DType::kBool), "BOOL");
  EXPECT_EQ(dtypeFromTorchName("torch.float"), DType::kFloat32);
  EXPECT_EQ(dtypeFromTorchName("half"), DType::kFloat16);
  EXPECT_EQ(dtypeFromStorageClass("BFloat16Storage"), DType::kBFloat16);
  EXPECT_EQ(dtypeFromStorageClass("ComplexDoubleStorage"), DType::kComplex128);
  EXPECT_FALSE(dtypeFromStorageClass("QInt8Storage").has_value());
  EXPECT_EQ(dtypeFromSafetensorsName("F8_E4M3"), DType::kFloat8E4M3);
  EXPECT_EQ(itemSize(DType::kComplex64), 8u);
  EXPECT_EQ(c10Name(DType::kBFloat16), "BFloat16");
  EXPECT_EQ(c10Name(DType::kInt8), "Char");
  EXPECT_EQ(dtypeFromC10Name("Float8_e4m3fn"), DType::kFloat8E4M3);
  EXPECT_EQ(dtypeFromC10Name("Long"), DType::kInt64);
  EXPECT_FALSE(dtypeFromC10Name("float").has_value());  // a torch name, not c10's
}

}  // namespace
}  // namespace fs::tensorfile
