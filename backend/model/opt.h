// OPT (Hugging Face OPTForCausalLM), the family of OpenFlamingo's default LM
// (facebook/opt-1.3b).
//
// Names: model.decoder.{embed_tokens, embed_positions, final_layer_norm,
// layers.{i}.{self_attn.{k_proj, v_proj, q_proj, out_proj},
// self_attn_layer_norm, fc1, fc2, final_layer_norm}}, lm_head (tied to
// embed_tokens: not a parameter of its own). Decoder layers:
// model.decoder.layers.
//
// Math: learned positions with offset 2 (position = cumsum(mask) * mask - 1,
// looked up at position + 2); pre-LN when layer_norm_before (OPT-1.3b); q
// scaled by head_dim^-0.5 before q k^T; ReLU MLP; dropout (0.1 by default)
// after attention and after fc2; final_layer_norm; logits = h E^T.
//
// Thread-safety: one forward at a time per instance (LibTorch modules).
#pragma once

#include "backend/model/common.h"
#include "backend/model/lm_family.h"

namespace fs::model {

class OptAttentionImpl : public torch::nn::Module {
 public:
  OptAttentionImpl(int64_t width, int64_t heads, double attention_dropout);
  // x (B, L, width); ctx: the causal bias or packed rows (NOTE [Packed attention]).
  // Projections on the real tokens only (NOTE [Skipped padding] in common.h).
  torch::Tensor forward(const torch::Tensor& x, const LayerContext& ctx);

  int64_t heads;
  double attention_dropout;
  torch::nn::Linear k_proj{nullptr};
  torch::nn::Linear v_proj{nullptr};
  torch::nn::Linear q_proj{nullptr};
  torch::nn::Linear out_proj{nullptr};
};
TORCH_MODULE(OptAttention);

class OptDecoderLayerImpl : public DecoderLayerImpl {
 public:
  explicit OptDecoderLayerImpl(const LmOptions& options);
  torch::Tensor forward(const torch::Tensor& hidden, const LayerContext& ctx) override;

  bool layer_norm_before;
  double dropout;
  OptAttention self_attn{nullptr};
  Norm self_attn_layer_norm{nullptr};
  torch::nn::Linear fc1{nullptr};
  torch::nn::Linear fc2{nullptr};
  Norm final_layer_norm{nullptr};
};

class OptLmImpl : public CausalLmImpl {
 public:
  explicit OptLmImpl(LmOptions options);

  std::string decoderLayersPath() const override { return "model.decoder.layers"; }
  std::string inputEmbeddingPath() const override { return "model.decoder.embed_tokens"; }
  std::string outputHeadPath() const override { return "lm_head"; }
  torch::Tensor embed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) override;
  LayerContext layerContext(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                            c10::ScalarType dtype) override;
  torch::Tensor finalNorm(const torch::Tensor& hidden) override;

  static constexpr int64_t kPositionOffset = 2;
  torch::nn::Embedding embed_positions{nullptr};  // (max_positions + 2, width)
  Norm final_layer_norm{nullptr};                 // absent for post-LN OPT
};

}  // namespace fs::model
