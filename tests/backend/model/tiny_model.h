// Tiny Flamingo models and batches for the model tests: the tiny preset
// (resources/presets/tiny.yaml) with the LM family switched.
#pragma once

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "backend/model/flamingo.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::model::testing {

// Variants: opt, mpt (MPT-7B names), mpt-1b (MosaicGPT names, QK LayerNorm),
// gpt_neox (RedPajama-INCITE-3B knobs), pythia (rotary 0.25, parallel
// residual), llama.
inline const std::vector<std::string>& variants() {
  static const std::vector<std::string> v = {"opt", "mpt", "mpt-1b", "gpt_neox", "pythia", "llama"};
  return v;
}

inline protocol::ModelConfig tinyConfig(const std::string& variant = "opt") {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml");
  EXPECT_TRUE(load.ok()) << "tiny.yaml does not load";
  auto c = load.config.model;
  c.lm.family = variant;
  if (variant == "mpt-1b") {
    c.lm.family = "mpt";
    c.lm.path = "anas-awadalla/mpt-1b-redpajama-200b";
  } else if (variant == "pythia") {
    c.lm.family = "gpt_neox";
    c.lm.path = "EleutherAI/pythia-160m";
  }
  if (c.lm.family == "gpt_neox" || c.lm.family == "llama") c.lm.tied_head = false;
  return c;
}

inline FlamingoOptions tinyOptions(const std::string& variant = "opt", bool no_dropout = true) {
  auto o = FlamingoOptions::fromConfig(tinyConfig(variant));
  if (no_dropout) o.lm().noDropout();
  return o;
}

inline Flamingo buildTiny(const std::string& variant = "opt", uint64_t seed = 0, bool no_dropout = true) {
  torch::manual_seed(seed);
  return Flamingo(tinyOptions(variant, no_dropout));
}

// (rows, cols) int64 tensor from nested lists (torch::tensor rejects mixed int / int64_t literals).
inline torch::Tensor longTensor(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return torch::tensor(flat, torch::kLong).view({static_cast<int64_t>(rows.size()), -1});
}

struct Batch {
  torch::Tensor vision_x;        // (2, 2, 1, 3, 32, 32)
  torch::Tensor input_ids;       // (2, 12)
  torch::Tensor attention_mask;  // (2, 12), row 1 right-padded
};

// Row 0: text before the first image (no visual signal), then two images.
// Row 1: starts with an image, three <image> tokens for two images (the third
// attends uniformly), right padding.
inline Batch tinyBatch(const FlamingoOptions& o, uint64_t seed = 1) {
  torch::manual_seed(seed);
  const int64_t img = o.image_id();
  const int64_t eoc = o.endofchunk_id();
  Batch b;
  b.vision_x = torch::randn({2, 2, 1, 3, o.vision().image_size(), o.vision().image_size()});
  b.input_ids = longTensor({{5, img, 7, 8, 9, eoc, img, 11, 12, 13, eoc, 2},  //
                            {img, 20, 21, eoc, img, 22, img, 23, 2, 1, 1, 1}});
  b.attention_mask = longTensor({{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}});
  return b;
}

// Gives every gate a distinct non-zero value so the cross-attention path counts.
inline void setGates(Flamingo& model) {
  torch::NoGradGuard no_grad;
  double v = 0.3;
  for (auto& block : model->gatedCrossAttentionBlocks()) {
    block->attn_gate.fill_(v);
    block->ff_gate.fill_(-0.5 * v);
    v += 0.4;
  }
}

// amp_bf16 for a scope: CPU autocast to bf16, then off with the cast cache cleared.
struct CpuAutocast {
  explicit CpuAutocast(bool enabled = true) {
    at::autocast::set_autocast_cpu_dtype(torch::kBFloat16);
    at::autocast::set_cpu_enabled(enabled);
  }
  ~CpuAutocast() {
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
  }
};

}  // namespace fs::model::testing
