// GPT-NeoX (Hugging Face GPTNeoXForCausalLM): RedPajama-INCITE-3B, the LM of
// OpenFlamingo-4B, and the Pythia models.
//
// Names: gpt_neox.{embed_in, layers.{i}.{input_layernorm,
// post_attention_layernorm, attention.{query_key_value, dense},
// mlp.{dense_h_to_4h, dense_4h_to_h}}, final_layer_norm}, embed_out (untied).
// Decoder layers: gpt_neox.layers.
//
// Math: query_key_value's output is interleaved per head: viewed as
// (B, L, heads, 3 * head_dim) and split q | k | v inside each head. Rotary in
// the rotate-half layout on the first rotary_pct * head_dim channels of q and
// k (positions 0..L-1); scores / sqrt(head_dim); GELU (erf) MLP. Sequential
// residual x + attn(ln_in(x)), then + mlp(ln_post(.)); or with
// parallel_residual x + attn(ln_in(x)) + mlp(ln_post(x)). RedPajama-INCITE-3B
// uses rotary_pct 1.0 and a sequential residual; Pythia 0.25 and parallel.
//
// Thread-safety: one forward at a time per instance (LibTorch modules).
#pragma once

#include "backend/model/common.h"
#include "backend/model/lm_family.h"

namespace fs::model {

class GptNeoxAttentionImpl : public torch::nn::Module {
 public:
  explicit GptNeoxAttentionImpl(const LmOptions& options);
  torch::Tensor forward(const torch::Tensor& x, const LayerContext& ctx);

  int64_t heads;
  double attention_dropout;
  torch::nn::Linear query_key_value{nullptr};
  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(GptNeoxAttention);

class GptNeoxMlpImpl : public torch::nn::Module {
 public:
  GptNeoxMlpImpl(int64_t width, int64_t hidden);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear dense_h_to_4h{nullptr};
  torch::nn::Linear dense_4h_to_h{nullptr};
};
TORCH_MODULE(GptNeoxMlp);

class GptNeoxLayerImpl : public DecoderLayerImpl {
 public:
  explicit GptNeoxLayerImpl(const LmOptions& options);
  torch::Tensor forward(const torch::Tensor& hidden, const LayerContext& ctx) override;

  bool parallel_residual;
  double dropout;
  Norm input_layernorm{nullptr};
  Norm post_attention_layernorm{nullptr};
  GptNeoxAttention attention{nullptr};
  GptNeoxMlp mlp{nullptr};
};

class GptNeoxLmImpl : public CausalLmImpl {
 public:
  explicit GptNeoxLmImpl(LmOptions options);

  std::string decoderLayersPath() const override { return "gpt_neox.layers"; }
  std::string inputEmbeddingPath() const override { return "gpt_neox.embed_in"; }
  std::string outputHeadPath() const override { return "embed_out"; }
  torch::Tensor embed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) override;
  LayerContext layerContext(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                            c10::ScalarType dtype) override;
  torch::Tensor finalNorm(const torch::Tensor& hidden) override;
  std::vector<std::string> recomputedBufferSuffixes() const override {
    return {"attention.bias", "attention.masked_bias", "attention.rotary_emb.inv_freq"};
  }

  int64_t rotaryDims() const;  // int(head_dim * rotary_pct)
  Norm final_layer_norm{nullptr};
};

}  // namespace fs::model
