// LLaMA (Hugging Face LlamaForCausalLM).
//
// Names: model.{embed_tokens, layers.{i}.{self_attn.{q_proj, k_proj, v_proj,
// o_proj}, mlp.{gate_proj, down_proj, up_proj}, input_layernorm,
// post_attention_layernorm}, norm}, lm_head (untied). No biases. Decoder
// layers: model.layers. (The mlp order is transformers 4.28's, OpenFlamingo's
// era; later versions register up_proj before down_proj.)
//
// Math: RMSNorm (fp32, eps 1e-6 for LLaMA-1, 1e-5 for Llama-2); rotary on the
// whole head (rotate-half layout, positions 0..L-1); scores / sqrt(head_dim);
// SwiGLU MLP down(silu(gate(x)) * up(x)); pre-norm residuals.
//
// Thread-safety: one forward at a time per instance (LibTorch modules).
#pragma once

#include "backend/model/common.h"
#include "backend/model/lm_family.h"

namespace fs::model {

class LlamaAttentionImpl : public torch::nn::Module {
 public:
  explicit LlamaAttentionImpl(const LmOptions& options);
  torch::Tensor forward(const torch::Tensor& x, const LayerContext& ctx);

  int64_t heads;
  double attention_dropout;
  torch::nn::Linear q_proj{nullptr};
  torch::nn::Linear k_proj{nullptr};
  torch::nn::Linear v_proj{nullptr};
  torch::nn::Linear o_proj{nullptr};
};
TORCH_MODULE(LlamaAttention);

class LlamaMlpImpl : public torch::nn::Module {
 public:
  LlamaMlpImpl(int64_t width, int64_t hidden);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear gate_proj{nullptr};
  torch::nn::Linear down_proj{nullptr};
  torch::nn::Linear up_proj{nullptr};
};
TORCH_MODULE(LlamaMlp);

class LlamaDecoderLayerImpl : public DecoderLayerImpl {
 public:
  explicit LlamaDecoderLayerImpl(const LmOptions& options);
  torch::Tensor forward(const torch::Tensor& hidden, const LayerContext& ctx) override;

  double dropout;  // 0 by default: Hugging Face's LLaMA has no residual dropout
  LlamaAttention self_attn{nullptr};
  LlamaMlp mlp{nullptr};
  Norm input_layernorm{nullptr};
  Norm post_attention_layernorm{nullptr};
};

class LlamaLmImpl : public CausalLmImpl {
 public:
  explicit LlamaLmImpl(LmOptions options);

  std::string decoderLayersPath() const override { return "model.layers"; }
  std::string inputEmbeddingPath() const override { return "model.embed_tokens"; }
  std::string outputHeadPath() const override { return "lm_head"; }
  torch::Tensor embed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) override;
  LayerContext layerContext(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                            c10::ScalarType dtype) override;
  torch::Tensor finalNorm(const torch::Tensor& hidden) override;
  std::vector<std::string> recomputedBufferSuffixes() const override {
    return {"self_attn.rotary_emb.inv_freq"};
  }

  Norm norm{nullptr};
};

}  // namespace fs::model
