// Shared by the FSDP tests: the tiny Flamingo as OpenFlamingo freezes it
// (gates open), its loss on a slice of rows, and its units.
#pragma once

#include <torch/torch.h>

#include <mutex>
#include <string>
#include <vector>

#include "backend/fsdp/sharded_model.h"
#include "tests/backend/model/tiny_model.h"

namespace fs::fsdp::testing {

using model::Flamingo;
namespace mt = model::testing;

// The ranks are threads sharing torch's generator: seeding and drawing happen under one lock.
inline std::mutex& rngMutex() {
  static std::mutex mu;
  return mu;
}

inline Flamingo buildModel(const std::string& family, bool checkpointing) {
  std::lock_guard<std::mutex> lock(rngMutex());
  Flamingo m = mt::buildTiny(family, 3);
  m->freezeAsOpenFlamingo();
  mt::setGates(m);
  m->setGradientCheckpointing(checkpointing);
  return m;
}

// Sum of next-token cross-entropy over the rows' real tokens, divided by the
// whole batch's count: summed over ranks it is the batch's mean loss.
inline torch::Tensor lossOf(Flamingo& m, const mt::Batch& b, int64_t row0, int64_t rows,
                            double globalTargets) {
  const auto ids = b.input_ids.narrow(0, row0, rows);
  const auto mask = b.attention_mask.narrow(0, row0, rows);
  const auto logits = m->forward(b.vision_x.narrow(0, row0, rows), ids, mask);
  const int64_t L = ids.size(1);
  auto labels = ids.slice(1, 1).clone();
  labels.masked_fill_(mask.slice(1, 1).eq(0), -100);
  const auto ce = torch::nn::functional::cross_entropy(
      logits.slice(1, 0, L - 1).reshape({-1, logits.size(2)}), labels.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100).reduction(torch::kSum));
  return ce / globalTargets;
}

inline std::vector<UnitSpec> flamingoUnits(Flamingo& m) {
  std::vector<UnitSpec> units{{"vision_encoder", m->visionEncoder().ptr()},
                              {"perceiver", m->perceiver().ptr()}};
  for (size_t i = 0; i < m->flamingoLayers().size(); ++i) {
    const auto& layer = m->flamingoLayers()[i];
    const std::string at = "lang_encoder.layers." + std::to_string(i);
    if (layer->hasCrossAttention())
      units.push_back({at + ".gated_cross_attn_layer", layer->gated_cross_attn_layer.ptr()});
    units.push_back({at + ".decoder_layer", layer->decoder_layer});
  }
  return units;
}

inline mt::Batch concatBatches(const mt::Batch& x, const mt::Batch& y) {
  return mt::Batch{torch::cat({x.vision_x, y.vision_x}), torch::cat({x.input_ids, y.input_ids}),
                   torch::cat({x.attention_mask, y.attention_mask})};
}

}  // namespace fs::fsdp::testing
