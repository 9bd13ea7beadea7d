// NOTE [Slot attention]: slotAttention against the masked softmax over every
// slot's latents, forward and backward, the runs it is given, and its input
// checks.
#include "backend/model/slot_attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace fs::model {
namespace {

constexpr int64_t kHeads = 2;
constexpr int64_t kDim = 3;  // per head
constexpr int64_t kLatents = 4;
constexpr int64_t kSlots = 3;

// The masked reference: every row's logits against all kSlots x kLatents keys,
// all but its own slot's set to -inf before the softmax.
torch::Tensor masked(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                     const std::vector<SlotRun>& runs, double scale) {
  const int64_t p = q.size(0);
  auto allowed = torch::zeros({p, kSlots * kLatents}, torch::kBool);
  for (const auto& r : runs)
    allowed.narrow(0, r.row, r.rows).narrow(1, r.slot * kLatents, kLatents).fill_(true);
  const auto qh = q.view({p, kHeads, kDim}).transpose(0, 1);                  // (H, P, D)
  const auto kh = k.view({kSlots * kLatents, kHeads, kDim}).transpose(0, 1);  // (H, S n, D)
  const auto vh = v.view({kSlots * kLatents, kHeads, kDim}).transpose(0, 1);
  auto sim = torch::matmul(qh, kh.transpose(1, 2)) * scale;
  sim = sim.masked_fill(allowed.logical_not().unsqueeze(0), -std::numeric_limits<float>::infinity());
  return torch::matmul(sim.softmax(-1), vh).transpose(0, 1).reshape({p, kHeads * kDim});
}

struct Grads {
  torch::Tensor out, dq, dk, dv;
};

Grads run(bool slot, const std::vector<SlotRun>& runs, int64_t rows) {
  torch::manual_seed(5);
  auto q = torch::randn({rows, kHeads * kDim}, torch::requires_grad());
  auto k = torch::randn({kSlots * kLatents, kHeads * kDim}, torch::requires_grad());
  auto v = torch::randn({kSlots * kLatents, kHeads * kDim}, torch::requires_grad());
  const double scale = 1.0 / std::sqrt(double(kDim));
  Grads g;
  g.out = slot ? slotAttention(q, k, v, kHeads, kLatents, scale, runs) : masked(q, k, v, runs, scale);
  torch::manual_seed(6);
  (g.out * torch::randn_like(g.out)).sum().backward();
  g.dq = q.grad();
  g.dk = k.grad();
  g.dv = v.grad();
  return g;
}

TEST(SlotAttention, RunsFollowTextTimeAndSamples) {
  // Row 0: no image yet, image 1 twice, image 2 twice. Row 1: image 1 three times, padding.
  const auto text_time = torch::tensor({0, 1, 1, 2, 2, 1, 1, 1, 1, 1}, torch::kLong).view({2, 5});
  const auto attending = torch::tensor({1, 2, 3, 4, 5, 6, 7}, torch::kLong);
  const auto runs = slotRuns(attending, text_time, 2);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].row, 0);
  EXPECT_EQ(runs[0].rows, 2);
  EXPECT_EQ(runs[0].slot, 0);
  EXPECT_EQ(runs[1].row, 2);
  EXPECT_EQ(runs[1].rows, 2);
  EXPECT_EQ(runs[1].slot, 1);
  EXPECT_EQ(runs[2].row, 4);
  EXPECT_EQ(runs[2].rows, 3);
  EXPECT_EQ(runs[2].slot, 2);  // sample 1, its first slot
  EXPECT_THROW(slotRuns(torch::tensor({0, 1}, torch::kLong), text_time, 2), c10::Error);  // text_time 0
}

TEST(SlotAttention, EqualsTheMaskedSoftmaxOverEverySlotForwardAndBackward) {
  const std::vector<SlotRun> runs = {{0, 3, 0}, {3, 1, 1}, {4, 2, 0}};
  const auto slot = run(true, runs, 6);
  const auto ref = run(false, runs, 6);
  EXPECT_TRUE(torch::allclose(slot.out, ref.out, 1e-5, 1e-6)) << (slot.out - ref.out).abs().max();
  EXPECT_TRUE(torch::allclose(slot.dq, ref.dq, 1e-5, 1e-6)) << (slot.dq - ref.dq).abs().max();
  EXPECT_TRUE(torch::allclose(slot.dk, ref.dk, 1e-5, 1e-6)) << (slot.dk - ref.dk).abs().max();
  EXPECT_TRUE(torch::allclose(slot.dv, ref.dv, 1e-5, 1e-6)) << (slot.dv - ref.dv).abs().max();
  EXPECT_TRUE(
      torch::equal(slot.dk.narrow(0, 2 * kLatents, kLatents), torch::zeros({kLatents, kHeads * kDim})));
}

TEST(SlotAttention, RefusesRunsThatDoNotTileTheRowsAndOtherDtypes) {
  auto q = torch::randn({4, kHeads * kDim});
  auto k = torch::randn({kSlots * kLatents, kHeads * kDim});
  const auto fails = [&](const std::vector<SlotRun>& runs, const std::string& what) {
    try {
      slotAttention(q, k, k, kHeads, kLatents, 1.0, runs);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails({{0, 3, 0}}, "cover 3 of 4 rows");
  fails({{0, 2, 0}, {3, 1, 1}}, "does not continue");
  fails({{0, 4, kSlots}}, "does not continue");  // no such slot
  EXPECT_THROW(slotAttention(q, k.narrow(0, 0, 5), k.narrow(0, 0, 5), kHeads, kLatents, 1.0, {{0, 4, 0}}),
               c10::Error);
  EXPECT_THROW(slotAttention(q.to(torch::kDouble), k.to(torch::kDouble), k.to(torch::kDouble), kHeads,
                             kLatents, 1.0, {{0, 4, 0}}),
               c10::Error);
  EXPECT_FALSE(slotAttentionSupports(q, k.to(torch::kBFloat16), k));
}

}  // namespace
}  // namespace fs::model
