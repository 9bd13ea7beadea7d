#include "backend/model/mpt.h"

#include <torch/torch.h>

#include <cmath>

#include "backend/model/dropout.h"

namespace fs::model {
namespace {
constexpr double kMptEps = 1e-5;

NormOptions noBiasNorm(const LmOptions& o) {
  return NormOptions(o.width()).eps(o.normEpsOr(kMptEps)).bias(false);
}

}  // namespace

torch::Tensor alibiSlopes(int64_t heads, double alibi_bias_max, torch::Device device) {
  const auto n = static_cast<int64_t>(std::pow(2.0, std::ceil(std::log2(static_cast<double>(heads)))));
  const auto m = torch::arange(1, n + 1, torch::TensorOptions().dtype(torch::kFloat).device(device)) *
                 (alibi_bias_max / static_cast<double>(n));
  auto slopes = 1.0 / torch::pow(2.0, m);
  if (n != heads) {
    const auto odd = slopes.slice(0, 1, n, 2);
    const auto even = slopes.slice(0, 0, n, 2);
    slopes = torch::cat({odd, even}).narrow(0, 0, heads);
  }
  return slopes;
}

// ---------------------------------------------------------------- attention

MptAttentionImpl::MptAttentionImpl(const LmOptions& o)
    : heads(o.heads()), attention_dropout(o.attentionDropoutOr(0.0)) {
  Wqkv = register_module("Wqkv", noBiasLinear(o.width(), 3 * o.width()));
  if (o.qk_ln()) {
    q_ln = register_module("q_ln", Norm(noBiasNorm(o)));
    k_ln = register_module("k_ln", Norm(noBiasNorm(o)));
  }
  out_proj = register_module("out_proj", noBiasLinear(o.width(), o.width()));
}

torch::Tensor MptAttentionImpl::forward(const torch::Tensor& x, const LayerContext& ctx) {
  // Packed rows (N, 3 width): q, k, v (NOTE [Skipped padding] in common.h).
  const auto qkv = Wqkv->forward(packTokens(x, ctx.real_tokens)).chunk(3, -1);
  auto q = qkv[0];
  auto k = qkv[1];
  if (q_ln) {
    q = q_ln->forward(q);
    k = k_ln->forward(k);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(x.size(-1) / heads));
  // ctx.attn_bias holds the ALiBi (ctx.position_bias): the bias path on every device.
  const auto out = causalSelfAttention(q, k, qkv[2], heads, scale, ctx, attention_dropout, is_training());
  return unpackTokens(out_proj->forward(out), ctx.real_tokens, x.size(0), x.size(1));
}

// ---------------------------------------------------------------- mlp / block

MptMlpImpl::MptMlpImpl(int64_t width, int64_t hidden, bool mosaic) {
  up = register_module(mosaic ? "mlp_up" : "up_proj", noBiasLinear(width, hidden));
  down = register_module(mosaic ? "mlp_down" : "down_proj", noBiasLinear(hidden, width));
}

torch::Tensor MptMlpImpl::forward(const torch::Tensor& x) {
  return down->forward(torch::gelu(up->forward(x)));
}

MptBlockImpl::MptBlockImpl(const LmOptions& o) : dropout(o.dropoutOr(0.0)) {
  const bool mosaic = o.mosaic_gpt_names();
  norm_1 = register_module(mosaic ? "ln_1" : "norm_1", Norm(noBiasNorm(o)));
  attn = register_module("attn", MptAttention(o));
  norm_2 = register_module(mosaic ? "ln_2" : "norm_2", Norm(noBiasNorm(o)));
  ffn = register_module(mosaic ? "mlp" : "ffn", MptMlp(o.width(), o.ffn_dim(), mosaic));
}

torch::Tensor MptBlockImpl::forward(const torch::Tensor& hidden, const LayerContext& ctx) {
  auto h = hidden + applyDropout(attn->forward(norm_1->forward(hidden), ctx), dropout, is_training());
  const auto f = onRealTokens(h, ctx.real_tokens,
                              [this](const torch::Tensor& x) { return ffn->forward(norm_2->forward(x)); });
  return h + applyDropout(f, dropout, is_training());
}

// ---------------------------------------------------------------- model

MptLmImpl::MptLmImpl(LmOptions opts) : CausalLmImpl(std::move(opts)) {
  const auto& o = options_;
  registerInputEmbedding();
  std::vector<DecoderLayerPtr> blocks;
  for (int64_t i = 0; i < o.layers(); ++i) blocks.push_back(std::make_shared<MptBlockImpl>(o));
  registerDecoderLayers(std::move(blocks));
  norm_f = containerAt(*this, "transformer")
               .register_module(o.mosaic_gpt_names() ? "ln_f" : "norm_f", Norm(noBiasNorm(o)));
  registerOutputHeadIfUntied();
  initWeights();
}

torch::Tensor MptLmImpl::embed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) {
  return applyDropout(embed_tokens_->forward(input_ids), options_.embeddingDropoutOr(0.0), is_training());
}

LayerContext MptLmImpl::layerContext(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                     c10::ScalarType dtype) {
  // ALiBi as MPT builds it: slope_h * (j - (L - 1)) for key j, the same for
  // every query row (softmax is shift-invariant per row), then the mask.
  const auto l = input_ids.size(1);
  const auto slopes = alibiSlopes(options_.heads(), options_.alibi_bias_max(), attention_mask.device());
  const auto distance =
      torch::arange(1 - l, 1, torch::TensorOptions().dtype(torch::kFloat).device(attention_mask.device()));
  const auto alibi = (slopes.view({1, -1, 1, 1}) * distance.view({1, 1, 1, l}));
  LayerContext ctx;
  ctx.attn_bias = causalAttentionBias(attention_mask, dtype, alibi);
  ctx.position_bias = true;
  return ctx;
}

torch::Tensor MptLmImpl::finalNorm(const torch::Tensor& hidden) {
  return norm_f->forward(hidden);
}

}  // namespace fs::model
