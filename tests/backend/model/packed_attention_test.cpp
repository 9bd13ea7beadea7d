// NOTE [Packed attention]: per-sample causal attention on packed rows must
// give every real query the output, and q / k / v the gradients, of the
// composite masked attention on the padded (B, H, L, L) layout.
#include "backend/model/packed_attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "backend/model/common.h"

namespace fs::model {
namespace {

struct Grads {
  torch::Tensor out, dq, dk, dv;
};

// The composite reference: unpack to (B, L), mask with the causal padding
// bias, scaledDotAttention, pack the real rows back.
Grads composite(const torch::Tensor& q0, const torch::Tensor& k0, const torch::Tensor& v0,
                const torch::Tensor& mask, int64_t heads, double scale, const torch::Tensor& upstream) {
  auto q = q0.detach().requires_grad_(true), k = k0.detach().requires_grad_(true),
       v = v0.detach().requires_grad_(true);
  const auto real = realTokenIndex(mask);
  const int64_t b = mask.size(0), l = mask.size(1);
  const auto split = [&](const torch::Tensor& t) { return splitHeads(unpackTokens(t, real, b, l), heads); };
  const auto bias = causalAttentionBias(mask, torch::kFloat);
  const auto out =
      packTokens(mergeHeads(scaledDotAttention(split(q), split(k), split(v), scale, bias, 0.0, false)), real);
  (out * upstream).sum().backward();
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

Grads packed(const torch::Tensor& q0, const torch::Tensor& k0, const torch::Tensor& v0,
             const torch::Tensor& mask, int64_t heads, double scale, const torch::Tensor& upstream) {
  auto q = q0.detach().requires_grad_(true), k = k0.detach().requires_grad_(true),
       v = v0.detach().requires_grad_(true);
  const auto out = packedCausalAttention(q, k, v, heads, scale, packedOffsets(mask));
  (out * upstream).sum().backward();
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

double relativeError(const torch::Tensor& got, const torch::Tensor& want) {
  return (got - want).abs().max().item<double>() / std::max(1e-6, want.abs().max().item<double>());
}

void expectAgree(const torch::Tensor& mask, int64_t heads, int64_t head_dim, double scale) {
  torch::manual_seed(static_cast<uint64_t>(mask.sum().item<int64_t>() * 31 + heads));
  const int64_t n = mask.ne(0).sum().item<int64_t>();
  const auto q = torch::randn({n, heads * head_dim}), k = torch::randn({n, heads * head_dim}),
             v = torch::randn({n, heads * head_dim}), up = torch::randn({n, heads * head_dim});
  const Grads want = composite(q, k, v, mask, heads, scale, up);
  const Grads got = packed(q, k, v, mask, heads, scale, up);
  EXPECT_LE(relativeError(got.out, want.out), 1e-5) << "output, mask " << mask;
  EXPECT_LE(relativeError(got.dq, want.dq), 1e-5) << "dq, mask " << mask;
  EXPECT_LE(relativeError(got.dk, want.dk), 1e-5) << "dk, mask " << mask;
  EXPECT_LE(relativeError(got.dv, want.dv), 1e-5) << "dv, mask " << mask;
}

TEST(PackedAttention, RightPaddingEqualsTheMaskedComposite) {
  const auto mask =
      torch::tensor({1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, torch::kLong)
          .view({3, 8});
  expectAgree(mask, 4, 8, 1.0 / std::sqrt(8.0));
  expectAgree(mask, 1, 16, 1.0);
  expectAgree(mask, 3, 5, 0.37);
}

TEST(PackedAttention, HolesSingleTokensAndEmptySamples) {
  // Real tokens that are not a prefix (a real query still sees exactly the
  // real keys before it), a one-token sample and an all-padding sample.
  const auto mask = torch::tensor({0,      1, 1, 0, 1, 1, 0, 1, /**/ 1, 0, 0, 0, 0, 0, 0, 0,
                                   /**/ 0, 0, 0, 0, 0, 0, 0, 0, /**/ 1, 1, 1, 1, 1, 1, 1, 1},
                                  torch::kLong)
                        .view({4, 8});
  expectAgree(mask, 2, 8, 0.25);
}

TEST(PackedAttention, LongerSequencesStayClose) {
  torch::manual_seed(5);
  const auto lengths = torch::randint(1, 97, {5}, torch::kLong);
  const auto mask = torch::arange(96, torch::kLong).unsqueeze(0).lt(lengths.unsqueeze(1)).to(torch::kLong);
  expectAgree(mask, 4, 16, 0.25);
}

TEST(PackedAttention, OffsetsCountEachRowsTokens) {
  const auto offsets = packedOffsets(torch::tensor({1, 1, 0, 0, 0, 0, 1, 0, 1}, torch::kLong).view({3, 3}));
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 2, 2, 4}));
}

TEST(PackedAttention, BadInputsNameTheProblem) {
  const auto t = torch::zeros({4, 6});
  const auto fails = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error, expected one mentioning '" << needle << "'";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  fails([&] { packedCausalAttention(t, t, t, 4, 1.0, {0, 4}); }, "not a multiple of 4 heads");
  fails(
      [&] {
        packedCausalAttention(t, t, t, 2, 1.0, {0, 3});
      },
      "offsets must rise from 0 to the 4 packed rows");
  fails([&] { packedCausalAttention(t, t, t.narrow(0, 0, 3), 2, 1.0, {0, 4}); }, "share one (N, H*D) shape");
  fails(
      [&] {
        packedCausalAttention(t.to(torch::kDouble), t.to(torch::kDouble), t.to(torch::kDouble), 2, 1.0,
                              {0, 4});
      },
      "fp32 CPU tensors only");
  fails(
      [&] {
        packedCausalAttention(t, t.to(torch::kBFloat16), t, 2, 1.0, {0, 4});
      },
      "fp32 CPU tensors only");
  const auto bf = t.to(torch::kBFloat16);
  EXPECT_TRUE(packedAttentionSupports(t, t, t, 0.1, false));
  EXPECT_FALSE(packedAttentionSupports(t, t, t, 0.1, true));
  EXPECT_FALSE(packedAttentionSupports(bf, bf, bf, 0.0, true));
  // CPU autocast: fp32 q (rotated in fp32) with bf16 k and v takes the composite path.
  EXPECT_FALSE(packedAttentionSupports(t, bf, t, 0.0, false));
  EXPECT_FALSE(packedAttentionSupports(t, t, bf, 0.0, false));
}

}  // namespace
}  // namespace fs::model
