// NOTE [Small layer norms]: layerNorm must be torch::layer_norm (values and
// gradients) on small inputs run on the calling thread and on large inputs
// left to ATen, must leave the thread's OpenMP thread count as it found it
// (also when ATen refuses the arguments), and must go through autograd,
// double precision and a missing bias included.
#include "backend/model/layer_norm.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace fs::model {
namespace {

struct Grads {
  torch::Tensor out, dx, dw, db;
};

Grads run(bool ours, const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0,
          const torch::Tensor& dy) {
  auto x = x0.clone().requires_grad_(true);
  auto w = w0.clone().requires_grad_(true);
  auto b = b0.defined() ? b0.clone().requires_grad_(true) : torch::Tensor();
  const int64_t dim = x.size(-1);
  auto out = ours ? layerNorm(x, dim, w, b, 1e-5) : torch::layer_norm(x, {dim}, w, b, 1e-5);
  out.backward(dy);
  return {out.detach(), x.grad(), w.grad(), b.defined() ? b.grad() : torch::Tensor()};
}

class LayerNormTest : public ::testing::Test {
 protected:
  void SetUp() override { at::set_num_threads(2); }
  void TearDown() override { at::set_num_threads(1); }
};

TEST_F(LayerNormTest, EqualsTorchLayerNormSmallAndLarge) {
  torch::manual_seed(3);
  // Small (serial), just over the limit, and large (ATen's threads), in fp32 and fp64.
  for (const auto& shape :
       std::vector<std::vector<int64_t>>{{6, 17, 33}, {2, 5}, {1, 1, 64}, {257, 128}, {64, 48, 96}}) {
    for (const auto dtype : {torch::kFloat32, torch::kFloat64}) {
      for (const bool withBias : {true, false}) {
        const auto opts = torch::TensorOptions().dtype(dtype);
        const auto x = torch::randn(shape, opts) * 3 + 1;
        const int64_t dim = shape.back();
        const auto w = torch::randn({dim}, opts);
        const auto b = withBias ? torch::randn({dim}, opts) : torch::Tensor();
        const auto dy = torch::randn(shape, opts);
        const auto want = run(false, x, w, b, dy);
        const auto got = run(true, x, w, b, dy);
        const std::string what =
            "shape " + c10::str(shape) + " " + c10::toString(dtype) + (withBias ? " bias" : "");
        EXPECT_EQ(at::get_num_threads(), 2) << what;
        // Each row's arithmetic is ATen's own: the output and the input gradient are bit-equal.
        EXPECT_TRUE(torch::equal(got.out, want.out)) << what;
        EXPECT_TRUE(torch::equal(got.dx, want.dx)) << what;
        // The weight and bias gradients sum over rows in another partition: equal up to rounding.
        const double tol = dtype == torch::kFloat32 ? 1e-5 : 1e-12;
        EXPECT_TRUE(torch::allclose(got.dw, want.dw, tol, tol)) << what << (got.dw - want.dw).abs().max();
        if (withBias) {
          EXPECT_TRUE(torch::allclose(got.db, want.db, tol, tol)) << what;
        }
      }
    }
  }
}

// A small input at 2 threads is computed exactly as ATen computes it at 1 thread.
TEST_F(LayerNormTest, SmallInputsGiveAtensOneThreadBits) {
  torch::manual_seed(4);
  const auto x = torch::randn({6, 17, 33});
  const auto w = torch::randn({33});
  const auto b = torch::randn({33});
  const auto dy = torch::randn({6, 17, 33});
  at::set_num_threads(1);
  const auto want = run(false, x, w, b, dy);
  at::set_num_threads(2);
  const auto got = run(true, x, w, b, dy);
  EXPECT_TRUE(torch::equal(got.out, want.out));
  EXPECT_TRUE(torch::equal(got.dx, want.dx));
  EXPECT_TRUE(torch::equal(got.dw, want.dw));
  EXPECT_TRUE(torch::equal(got.db, want.db));
}

TEST_F(LayerNormTest, ABadWeightIsAnErrorAndTheThreadCountSurvivesIt) {
  const auto x = torch::randn({4, 8});
  EXPECT_THROW(layerNorm(x, 8, torch::ones({7}), torch::zeros({8}), 1e-5), c10::Error);
  EXPECT_EQ(at::get_num_threads(), 2);
}

}  // namespace
}  // namespace fs::model
