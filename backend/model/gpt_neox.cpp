#include "backend/model/gpt_neox.h"

#include <torch/torch.h>

#include <cmath>

#include "backend/model/dropout.h"

namespace fs::model {
namespace {
constexpr double kNeoxEps = 1e-5;
}

GptNeoxAttentionImpl::GptNeoxAttentionImpl(const LmOptions& o)
    : heads(o.heads()), attention_dropout(o.attentionDropoutOr(0.0)) {
  query_key_value = register_module("query_key_value", torch::nn::Linear(o.width(), 3 * o.width()));
  dense = register_module("dense", torch::nn::Linear(o.width(), o.width()));
}

torch::Tensor GptNeoxAttentionImpl::forward(const torch::Tensor& x, const LayerContext& ctx) {
  const auto width = x.size(2);
  const auto head_dim = width / heads;
  // Interleaved per head: packed rows (N, H, 3 * d), then q | k | v.
  const auto qkv = query_key_value->forward(packTokens(x, ctx.real_tokens)).view({-1, heads, 3 * head_dim});
  const RotaryTables tables{ctx.rope_cos, ctx.rope_sin};
  const auto q = applyRotary(qkv.narrow(-1, 0, head_dim), tables).reshape({-1, width});
  const auto k = applyRotary(qkv.narrow(-1, head_dim, head_dim), tables).reshape({-1, width});
  const auto v = qkv.narrow(-1, 2 * head_dim, head_dim).reshape({-1, width});
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  const auto out = causalSelfAttention(q, k, v, heads, scale, ctx, attention_dropout, is_training());
  return unpackTokens(dense->forward(out), ctx.real_tokens, x.size(0), x.size(1));
}

GptNeoxMlpImpl::GptNeoxMlpImpl(int64_t width, int64_t hidden) {
  dense_h_to_4h = register_module("dense_h_to_4h", torch::nn::Linear(width, hidden));
  dense_4h_to_h = register_module("dense_4h_to_h", torch::nn::Linear(hidden, width));
}

torch::Tensor GptNeoxMlpImpl::forward(const torch::Tensor& x) {
  return dense_4h_to_h->forward(torch::gelu(dense_h_to_4h->forward(x)));
}

GptNeoxLayerImpl::GptNeoxLayerImpl(const LmOptions& o)
    : parallel_residual(o.parallel_residual()), dropout(o.dropoutOr(0.0)) {
  const double eps = o.normEpsOr(kNeoxEps);
  // GPTNeoXLayer's order: both norms, then attention, then mlp.
  input_layernorm = register_module("input_layernorm", Norm(NormOptions(o.width()).eps(eps)));
  post_attention_layernorm =
      register_module("post_attention_layernorm", Norm(NormOptions(o.width()).eps(eps)));
  attention = register_module("attention", GptNeoxAttention(o));
  mlp = register_module("mlp", GptNeoxMlp(o.width(), o.ffn_dim()));
}

torch::Tensor GptNeoxLayerImpl::forward(const torch::Tensor& hidden, const LayerContext& ctx) {
  const auto attn_out =
      applyDropout(attention->forward(input_layernorm->forward(hidden), ctx), dropout, is_training());
  const auto mlpOf = [&](const torch::Tensor& in) {
    return onRealTokens(in, ctx.real_tokens, [this](const torch::Tensor& x) {
      return mlp->forward(post_attention_layernorm->forward(x));
    });
  };
  if (parallel_residual) return applyDropout(mlpOf(hidden), dropout, is_training()) + attn_out + hidden;
  const auto h = attn_out + hidden;
  return applyDropout(mlpOf(h), dropout, is_training()) + h;
}

GptNeoxLmImpl::GptNeoxLmImpl(LmOptions opts) : CausalLmImpl(std::move(opts)) {
  const auto& o = options_;
  TORCH_CHECK(rotaryDims() > 0 && rotaryDims() % 2 == 0, "lm.rotary_pct ", o.rotary_pct(),
              " gives an odd or empty rotary width ", rotaryDims(), " for head_dim ", o.width() / o.heads());
  registerInputEmbedding();
  std::vector<DecoderLayerPtr> layers;
  for (int64_t i = 0; i < o.layers(); ++i) layers.push_back(std::make_shared<GptNeoxLayerImpl>(o));
  registerDecoderLayers(std::move(layers));
  final_layer_norm =
      containerAt(*this, "gpt_neox")
          .register_module("final_layer_norm", Norm(NormOptions(o.width()).eps(o.normEpsOr(kNeoxEps))));
  registerOutputHeadIfUntied();
  initWeights();
}

int64_t GptNeoxLmImpl::rotaryDims() const {
  return static_cast<int64_t>(static_cast<double>(options_.width() / options_.heads()) *
                              options_.rotary_pct());
}

torch::Tensor GptNeoxLmImpl::embed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) {
  return applyDropout(embed_tokens_->forward(input_ids), options_.embeddingDropoutOr(0.0), is_training());
}

LayerContext GptNeoxLmImpl::layerContext(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                         c10::ScalarType dtype) {
  return rotaryLayerContext(input_ids, attention_mask, rotaryDims(), options_.rotary_base(), dtype);
}

torch::Tensor GptNeoxLmImpl::finalNorm(const torch::Tensor& hidden) {
  return final_layer_norm->forward(hidden);
}

}  // namespace fs::model
