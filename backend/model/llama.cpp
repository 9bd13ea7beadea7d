#include "backend/model/llama.h"

#include <torch/torch.h>

#include <cmath>

#include "backend/model/dropout.h"

namespace fs::model {
namespace {
constexpr double kLlamaEps = 1e-6;  // LLaMA-1's rms_norm_eps

NormOptions rmsNorm(const LmOptions& o) {
  return NormOptions(o.width()).eps(o.normEpsOr(kLlamaEps)).rms(true);
}
}  // namespace

LlamaAttentionImpl::LlamaAttentionImpl(const LmOptions& o)
    : heads(o.heads()), attention_dropout(o.attentionDropoutOr(0.0)) {
  q_proj = register_module("q_proj", noBiasLinear(o.width(), o.width()));
  k_proj = register_module("k_proj", noBiasLinear(o.width(), o.width()));
  v_proj = register_module("v_proj", noBiasLinear(o.width(), o.width()));
  o_proj = register_module("o_proj", noBiasLinear(o.width(), o.width()));
}

torch::Tensor LlamaAttentionImpl::forward(const torch::Tensor& x, const LayerContext& ctx) {
  const RotaryTables tables{ctx.rope_cos, ctx.rope_sin};
  const int64_t width = x.size(-1);
  const int64_t head_dim = width / heads;
  const auto xp = packTokens(x, ctx.real_tokens);
  // Packed rows (N, H, D), rotated by the packed rows' tables (N, 1, rot).
  const auto rotated = [&](const torch::Tensor& t) {
    return applyRotary(t.view({-1, heads, head_dim}), tables).reshape({-1, width});
  };
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  const auto out =
      causalSelfAttention(rotated(q_proj->forward(xp)), rotated(k_proj->forward(xp)), v_proj->forward(xp),
                          heads, scale, ctx, attention_dropout, is_training());
  return unpackTokens(o_proj->forward(out), ctx.real_tokens, x.size(0), x.size(1));
}

LlamaMlpImpl::LlamaMlpImpl(int64_t width, int64_t hidden) {
  gate_proj = register_module("gate_proj", noBiasLinear(width, hidden));
  down_proj = register_module("down_proj", noBiasLinear(hidden, width));
  up_proj = register_module("up_proj", noBiasLinear(width, hidden));
}

torch::Tensor LlamaMlpImpl::forward(const torch::Tensor& x) {
  return down_proj->forward(torch::silu(gate_proj->forward(x)) * up_proj->forward(x));
}

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const LmOptions& o) : dropout(o.dropoutOr(0.0)) {
  self_attn = register_module("self_attn", LlamaAttention(o));
  mlp = register_module("mlp", LlamaMlp(o.width(), o.ffn_dim()));
  input_layernorm = register_module("input_layernorm", Norm(rmsNorm(o)));
  post_attention_layernorm = register_module("post_attention_layernorm", Norm(rmsNorm(o)));
}

torch::Tensor LlamaDecoderLayerImpl::forward(const torch::Tensor& hidden, const LayerContext& ctx) {
  const auto h = hidden + applyDropout(self_attn->forward(input_layernorm->forward(hidden), ctx), dropout,
                                       is_training());
  const auto f = onRealTokens(h, ctx.real_tokens, [this](const torch::Tensor& x) {
    return mlp->forward(post_attention_layernorm->forward(x));
  });
  return h + applyDropout(f, dropout, is_training());
}

LlamaLmImpl::LlamaLmImpl(LmOptions opts) : CausalLmImpl(std::move(opts)) {
  const auto& o = options_;
  registerInputEmbedding();
  std::vector<DecoderLayerPtr> layers;
  for (int64_t i = 0; i < o.layers(); ++i) layers.push_back(std::make_shared<LlamaDecoderLayerImpl>(o));
  registerDecoderLayers(std::move(layers));
  norm = containerAt(*this, "model").register_module("norm", Norm(rmsNorm(o)));
  registerOutputHeadIfUntied();
  initWeights();
}

torch::Tensor LlamaLmImpl::embed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) {
  return applyDropout(embed_tokens_->forward(input_ids), options_.embeddingDropoutOr(0.0), is_training());
}

LayerContext LlamaLmImpl::layerContext(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                       c10::ScalarType dtype) {
  return rotaryLayerContext(input_ids, attention_mask, options_.width() / options_.heads(),
                            options_.rotary_base(), dtype);
}

torch::Tensor LlamaLmImpl::finalNorm(const torch::Tensor& hidden) {
  return norm->forward(hidden);
}

}  // namespace fs::model
