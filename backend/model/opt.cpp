#include "backend/model/opt.h"

#include <torch/torch.h>

#include <cmath>

#include "backend/model/dropout.h"

namespace fs::model {
namespace {
constexpr double kDropout = 0.1;  // OPTConfig.dropout
constexpr double kAttentionDropout = 0.0;
constexpr double kOptEps = 1e-5;
}  // namespace

OptAttentionImpl::OptAttentionImpl(int64_t width, int64_t heads_, double attention_dropout_)
    : heads(heads_), attention_dropout(attention_dropout_) {
  // Hugging Face's registration order: k, v, q, out.
  k_proj = register_module("k_proj", torch::nn::Linear(width, width));
  v_proj = register_module("v_proj", torch::nn::Linear(width, width));
  q_proj = register_module("q_proj", torch::nn::Linear(width, width));
  out_proj = register_module("out_proj", torch::nn::Linear(width, width));
}

torch::Tensor OptAttentionImpl::forward(const torch::Tensor& x, const LayerContext& ctx) {
  const double scaling = 1.0 / std::sqrt(static_cast<double>(x.size(-1) / heads));
  const auto xp = packTokens(x, ctx.real_tokens);
  const auto out =
      causalSelfAttention(q_proj->forward(xp) * scaling, k_proj->forward(xp), v_proj->forward(xp), heads, 1.0,
                          ctx, attention_dropout, is_training());
  return unpackTokens(out_proj->forward(out), ctx.real_tokens, x.size(0), x.size(1));
}

OptDecoderLayerImpl::OptDecoderLayerImpl(const LmOptions& o)
    : layer_norm_before(o.layer_norm_before()), dropout(o.dropoutOr(kDropout)) {
  const double eps = o.normEpsOr(kOptEps);
  self_attn = register_module("self_attn",
                              OptAttention(o.width(), o.heads(), o.attentionDropoutOr(kAttentionDropout)));
  self_attn_layer_norm = register_module("self_attn_layer_norm", Norm(NormOptions(o.width()).eps(eps)));
  fc1 = register_module("fc1", torch::nn::Linear(o.width(), o.ffn_dim()));
  fc2 = register_module("fc2", torch::nn::Linear(o.ffn_dim(), o.width()));
  final_layer_norm = register_module("final_layer_norm", Norm(NormOptions(o.width()).eps(eps)));
}

torch::Tensor OptDecoderLayerImpl::forward(const torch::Tensor& hidden, const LayerContext& ctx) {
  auto h = layer_norm_before ? self_attn_layer_norm->forward(hidden) : hidden;
  h = applyDropout(self_attn->forward(h, ctx), dropout, is_training());
  h = hidden + h;
  if (!layer_norm_before) h = self_attn_layer_norm->forward(h);

  auto f = onRealTokens(h, ctx.real_tokens, [this](const torch::Tensor& x) {
    return fc2->forward(torch::relu(fc1->forward(layer_norm_before ? final_layer_norm->forward(x) : x)));
  });
  f = applyDropout(f, dropout, is_training());
  h = h + f;
  if (!layer_norm_before) h = final_layer_norm->forward(h);
  return h;
}

OptLmImpl::OptLmImpl(LmOptions opts) : CausalLmImpl(std::move(opts)) {
  const auto& o = options_;
  // OPTDecoder's order: embed_tokens, embed_positions, final_layer_norm, layers; then lm_head.
  registerInputEmbedding();
  embed_positions =
      containerAt(*this, "model.decoder")
          .register_module("embed_positions",
                           torch::nn::Embedding(o.max_positions() + kPositionOffset, o.width()));
  if (o.layer_norm_before()) {
    final_layer_norm =
        containerAt(*this, "model.decoder")
            .register_module("final_layer_norm", Norm(NormOptions(o.width()).eps(o.normEpsOr(kOptEps))));
  }
  std::vector<DecoderLayerPtr> layers;
  for (int64_t i = 0; i < o.layers(); ++i) layers.push_back(std::make_shared<OptDecoderLayerImpl>(o));
  registerDecoderLayers(std::move(layers));
  registerOutputHeadIfUntied();
  initWeights();
  // nn.Embedding(padding_idx=pad_token_id): HF's init zeroes that row.
  if (o.pad_token_id() >= 0 && o.pad_token_id() < o.vocab_size()) {
    torch::NoGradGuard no_grad;
    embed_tokens_->weight[o.pad_token_id()].zero_();
  }
}

torch::Tensor OptLmImpl::embed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) {
  TORCH_CHECK(input_ids.size(1) <= options_.max_positions(), "OPT: sequence length ", input_ids.size(1),
              " exceeds lm.max_positions ", options_.max_positions());
  const auto mask = attention_mask.to(torch::kLong);
  const auto positions = mask.cumsum(1) * mask - 1;
  auto h = embed_tokens_->forward(input_ids) + embed_positions->forward(positions + kPositionOffset);
  return applyDropout(h, options_.embeddingDropoutOr(0.0), is_training());
}

LayerContext OptLmImpl::layerContext(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                     c10::ScalarType dtype) {
  LayerContext ctx;
  ctx.attn_bias = causalAttentionBias(attention_mask, dtype);
  return ctx;
}

torch::Tensor OptLmImpl::finalNorm(const torch::Tensor& hidden) {
  return final_layer_norm ? final_layer_norm->forward(hidden) : hidden;
}

}  // namespace fs::model
