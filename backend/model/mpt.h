// MPT (MosaicML's MPTForCausalLM, MPT-7B) and its predecessor MosaicGPT
// (mosaicml/mpt-1b-redpajama-200b, the LM of OpenFlamingo-3B).
//
// Names, MPT: transformer.{wte, blocks.{i}.{norm_1, attn.{Wqkv, [q_ln, k_ln],
// out_proj}, norm_2, ffn.{up_proj, down_proj}}, norm_f}.
// MosaicGPT (mosaic_gpt_names): transformer.{wte, blocks.{i}.{ln_1,
// attn.{Wqkv, q_ln, k_ln, out_proj}, ln_2, mlp.{mlp_up, mlp_down}}, ln_f}.
// No biases anywhere (`no_bias`, LayerNorms included); no positional
// embedding (ALiBi); the head is wte itself (logits = h wte^T, no lm_head).
// Decoder layers: transformer.blocks.
//
// Math: pre-LN blocks x + attn(norm_1(x)), x + ffn(norm_2(x)); Wqkv output
// chunked q, k, v; optional LayerNorm over the full q and k (MPT-1B); scores =
// q k^T / sqrt(head_dim) + ALiBi; exact GELU MLP. The low-precision LayerNorm
// of the checkpoints equals LayerNorm in fp32. Dropouts default to 0.
//
// Thread-safety: one forward at a time per instance (LibTorch modules).
#pragma once

#include "backend/model/common.h"
#include "backend/model/lm_family.h"

namespace fs::model {

class MptAttentionImpl : public torch::nn::Module {
 public:
  explicit MptAttentionImpl(const LmOptions& options);
  // x (B, L, width); ctx: the ALiBi bias, the real tokens (the projections run
  // on them only: NOTE [Skipped padding] in common.h).
  torch::Tensor forward(const torch::Tensor& x, const LayerContext& ctx);

  int64_t heads;
  double attention_dropout;
  torch::nn::Linear Wqkv{nullptr};  // NOLINT: the checkpoint's name
  Norm q_ln{nullptr};               // qk_ln only
  Norm k_ln{nullptr};
  torch::nn::Linear out_proj{nullptr};
};
TORCH_MODULE(MptAttention);

class MptMlpImpl : public torch::nn::Module {
 public:
  MptMlpImpl(int64_t width, int64_t hidden, bool mosaic_gpt_names);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear up{nullptr};    // ffn.up_proj | mlp.mlp_up
  torch::nn::Linear down{nullptr};  // ffn.down_proj | mlp.mlp_down
};
TORCH_MODULE(MptMlp);

class MptBlockImpl : public DecoderLayerImpl {
 public:
  explicit MptBlockImpl(const LmOptions& options);
  torch::Tensor forward(const torch::Tensor& hidden, const LayerContext& ctx) override;

  double dropout;
  Norm norm_1{nullptr};  // | ln_1
  MptAttention attn{nullptr};
  Norm norm_2{nullptr};  // | ln_2
  MptMlp ffn{nullptr};   // | mlp
};

class MptLmImpl : public CausalLmImpl {
 public:
  explicit MptLmImpl(LmOptions options);

  std::string decoderLayersPath() const override { return "transformer.blocks"; }
  std::string inputEmbeddingPath() const override { return "transformer.wte"; }
  std::string outputHeadPath() const override { return "lm_head"; }
  torch::Tensor embed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) override;
  LayerContext layerContext(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                            c10::ScalarType dtype) override;
  torch::Tensor finalNorm(const torch::Tensor& hidden) override;

  Norm norm_f{nullptr};  // | ln_f
};

// ALiBi slopes as MPT's gen_slopes: 1 / 2^(k * max / n) for k = 1..n, n the
// next power of two of `heads`; for other head counts the odd-indexed then
// even-indexed slopes, first `heads` of them. Shape (heads).
torch::Tensor alibiSlopes(int64_t heads, double alibi_bias_max, torch::Device device = torch::kCPU);

}  // namespace fs::model
