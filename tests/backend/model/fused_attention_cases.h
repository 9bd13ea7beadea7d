// The batches and the forward/backward that fused_attention_test (CPU) and
// fused_attention_gpu_test (CUDA) run the tiny model through: NOTE [Fused
// attention] in backend/model/fused_attention.h.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "backend/model/common.h"
#include "backend/model/flamingo.h"
#include "backend/model/fused_attention.h"
#include "backend/model/gated_cross_attention.h"
#include "tiny_model.h"

namespace fs::model::testing {

// padded: tinyBatch and a third row with more padding than text: text before
//   the first image, right padding, a row with three <image> tokens for two
//   slots (its last text attends uniformly). The model picks its own index
//   sets (on the tiny model: none but the real tokens when padding is skipped).
// slots: three image slots, no padding; row 0 has text before its first image
//   and refers to two slots (the third is unreferenced, so zero media), row 1
//   to all three, row 2 to one. The index sets are given: the referenced
//   slots, and the attending tokens whatever the width, so the CPU path takes
//   NOTE [Slot attention].
enum class BatchKind { kPadded, kSlots };

inline std::string batchName(BatchKind kind) {
  return kind == BatchKind::kPadded ? "padded" : "slots";
}

struct CaseBatch {
  Batch batch;
  bool givenSets = false;
  IndexSets sets;  // when givenSets
};

inline CaseBatch caseBatch(const FlamingoOptions& o, BatchKind kind, Padding padding) {
  CaseBatch c;
  if (kind == BatchKind::kPadded) {
    c.batch = tinyBatch(o, 4);
    c.batch.input_ids =
        torch::cat({c.batch.input_ids, longTensor({{o.image_id(), 30, 31, 1, 1, 1, 1, 1, 1, 1, 1, 1}})});
    c.batch.attention_mask =
        torch::cat({c.batch.attention_mask, longTensor({{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}})});
    c.batch.vision_x = torch::cat({c.batch.vision_x, c.batch.vision_x.narrow(0, 0, 1)});
    return c;
  }
  const int64_t img = o.image_id();
  const int64_t eoc = o.endofchunk_id();
  torch::manual_seed(5);
  c.batch.vision_x = torch::randn({3, 3, 1, 3, o.vision().image_size(), o.vision().image_size()});
  c.batch.input_ids = longTensor({{5, 6, img, 7, 8, eoc, img, 9, 10, 11, eoc, 12},
                                  {img, 20, eoc, img, 21, 22, eoc, img, 23, 24, 25, eoc},
                                  {img, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, eoc}});
  c.batch.attention_mask = torch::ones_like(c.batch.input_ids);
  c.givenSets = true;
  c.sets.realTokens = padding == Padding::kSkip ? realTokenIndex(c.batch.attention_mask) : torch::Tensor();
  const auto counts = c.batch.input_ids.eq(img).sum(1, /*keepdim=*/true);
  c.sets.slots =
      torch::arange(3, counts.options()).view({1, 3}).lt(counts).reshape({-1}).nonzero().view({-1});
  c.sets.attending = attendingTokens(mediaTextTime(c.batch.input_ids, img), c.sets.realTokens, 3);
  c.sets.unpadded = true;
  EXPECT_TRUE(c.sets.attending.defined() && c.sets.slots.size(0) == 6)
      << "the paths under test are not taken";
  return c;
}

struct ModelRun {
  torch::Tensor logits;
  std::vector<std::pair<std::string, torch::Tensor>> grads;  // every parameter; undefined: no gradient
};

// One forward and backward of `model` (all parameters trainable, gates set)
// on `c`, moved to `device`; the loss weighs every position, padding too.
inline ModelRun runModel(Flamingo& model, const CaseBatch& c, Padding padding,
                         torch::Device device = torch::kCPU) {
  model->zero_grad();
  const auto to = [&](const torch::Tensor& t) { return t.defined() ? t.to(device) : t; };
  const IndexSets sets{to(c.sets.realTokens), to(c.sets.slots), to(c.sets.attending), c.sets.unpadded};
  const auto logits =
      model->forward(to(c.batch.vision_x).to(model->outputHeadWeight().scalar_type()), to(c.batch.input_ids),
                     to(c.batch.attention_mask), padding, c.givenSets ? &sets : nullptr);
  torch::manual_seed(9);
  const auto weights = torch::randn(logits.sizes()).to(device);
  (logits.to(torch::kFloat) * weights).sum().backward();
  ModelRun r;
  r.logits = logits.detach().to(torch::kCPU, torch::kFloat);
  for (const auto& [name, p] : model->namedParameters()) {
    r.grads.emplace_back(
        name, p.grad().defined() ? p.grad().detach().to(torch::kCPU, torch::kFloat) : torch::Tensor());
  }
  return r;
}

// max |got - want| / max |want| (want's scale at least `floor`).
inline double maxRelative(const torch::Tensor& got, const torch::Tensor& want, double floor = 1e-6) {
  return (got - want).abs().max().item<double>() / std::max(floor, want.abs().max().item<double>());
}

// ||got - want|| / ||want|| (want's norm at least `floor`).
inline double normRelative(const torch::Tensor& got, const torch::Tensor& want, double floor = 1e-6) {
  return (got - want).norm().item<double>() / std::max(floor, want.norm().item<double>());
}

inline const char* kindName(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::kCausalSelf:
      return "causal self-attention";
    case AttentionKind::kResampler:
      return "resampler";
    case AttentionKind::kMediaCross:
      return "cross-attention";
  }
  return "?";
}

}  // namespace fs::model::testing
