#include "backend/model/gated_cross_attention.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cmath>

#include "backend/model/common.h"
#include "backend/model/fused_attention.h"
#include "backend/model/slot_attention.h"
#include "backend/protocol/config/config_types.h"

namespace fs::model {

GatedCrossAttentionOptions GatedCrossAttentionOptions::fromConfig(int64_t lm_width, int64_t vision_width,
                                                                  const protocol::CrossAttnConfig& c) {
  return GatedCrossAttentionOptions(lm_width, vision_width)
      .heads(c.heads)
      .head_dim(c.head_dim)
      .ff_mult(c.ff_mult);
}

torch::Tensor mediaTextTime(const torch::Tensor& input_ids, int64_t image_id) {
  return input_ids.eq(image_id).to(torch::kLong).cumsum(-1);
}

torch::Tensor attendingTokens(const torch::Tensor& text_time, const torch::Tensor& real_tokens, int64_t slots,
                              int64_t work_per_token) {
  // At most every position is left out: when even that does not pay, no need to look.
  if (work_per_token > 0 && !skippingPays(text_time.numel(), work_per_token)) return {};
  const auto flat = text_time.reshape({-1});
  const auto candidates =
      real_tokens.defined() ? real_tokens : torch::arange(flat.size(0), flat.options().dtype(torch::kLong));
  const auto time = flat.index_select(0, candidates);
  if (time.gt(slots).any().item<bool>()) return {};  // uniform attention: keep every position
  const auto attending = candidates.masked_select(time.ge(1));
  const int64_t left_out = flat.size(0) - attending.size(0);
  if (left_out == 0 || (work_per_token > 0 && !skippingPays(left_out, work_per_token))) return {};
  return attending;
}

// ---------------------------------------------------------------- masked cross-attention

namespace {
// (B, 1, L, T_img n) bool: text position i may attend media token j (NOTE [Media masking]).
torch::Tensor mediaAllowed(const torch::Tensor& text_time, int64_t t_img, int64_t n) {
  // 1, .., 1, 2, .., 2, .. (n of each): the slot of each media token. Not repeat_interleave, whose
  // output size is read back from its device (a host sync on CUDA).
  const auto media_time =
      torch::arange(n, (t_img + 1) * n, torch::TensorOptions().dtype(torch::kLong).device(text_time.device()))
          .div(n, "floor");
  return text_time.view({text_time.size(0), 1, text_time.size(1), 1})
      .eq(media_time.view({1, 1, 1, t_img * n}));
}
}  // namespace

MaskedCrossAttentionImpl::MaskedCrossAttentionImpl(const GatedCrossAttentionOptions& o)
    : heads(o.heads()), head_dim(o.head_dim()) {
  const int64_t inner = heads * head_dim;
  norm = register_module("norm", Norm(NormOptions(o.dim())));
  to_q = register_module("to_q", torch::nn::Linear(torch::nn::LinearOptions(o.dim(), inner).bias(false)));
  to_kv = register_module("to_kv",
                          torch::nn::Linear(torch::nn::LinearOptions(o.dim_visual(), 2 * inner).bias(false)));
  to_out = register_module("to_out", torch::nn::Linear(torch::nn::LinearOptions(inner, o.dim()).bias(false)));
}

torch::Tensor MaskedCrossAttentionImpl::projectedQuery(const torch::Tensor& x, const torch::Tensor& media,
                                                       const torch::Tensor& text_time,
                                                       const torch::Tensor& attending) {
  TORCH_CHECK(media.dim() == 4, "MaskedCrossAttention: expected media (B, T_img, n, D), got ", media.sizes());
  TORCH_CHECK(text_time.dim() == 2 && text_time.size(1) == x.size(1), "MaskedCrossAttention: text_time ",
              text_time.sizes(), " does not match the text ", x.sizes());
  // NOTE [Attending tokens]: q of the attending positions, zeros elsewhere.
  return attending.defined() ? unpackTokens(to_q->forward(norm->forward(packTokens(x, attending))), attending,
                                            x.size(0), x.size(1))
                             : to_q->forward(norm->forward(x));
}

torch::Tensor MaskedCrossAttentionImpl::probabilities(const torch::Tensor& x, const torch::Tensor& media,
                                                      const torch::Tensor& text_time,
                                                      const torch::Tensor& attending, torch::Tensor* v_out) {
  const auto projected = projectedQuery(x, media, text_time, attending);
  const auto b = x.size(0);
  const auto l = x.size(1);
  const auto t_img = media.size(1);
  const auto n = media.size(2);
  const auto q = splitHeads(projected, heads) * (1.0 / std::sqrt(double(head_dim)));
  const auto kv = to_kv->forward(media.reshape({b, t_img * n, media.size(3)})).chunk(2, -1);
  const auto k = splitHeads(kv[0], heads);
  if (v_out != nullptr) *v_out = splitHeads(kv[1], heads);

  auto sim = torch::matmul(q, k.transpose(-2, -1));  // (B, H, L, T_img * n)
  sim = sim.masked_fill(mediaAllowed(text_time, t_img, n).logical_not(), lowestFinite(sim.scalar_type()));
  sim = sim - std::get<0>(sim.max(-1, /*keepdim=*/true)).detach();
  auto attn = sim.softmax(-1);
  return attn.masked_fill(text_time.eq(0).view({b, 1, l, 1}), 0.0);
}

torch::Tensor MaskedCrossAttentionImpl::fused(const torch::Tensor& x, const torch::Tensor& media,
                                              const torch::Tensor& text_time,
                                              const torch::Tensor& attending) {
  const auto projected = projectedQuery(x, media, text_time, attending);
  const auto b = x.size(0);
  const auto l = x.size(1);
  const auto t_img = media.size(1);
  const auto n = media.size(2);
  // NOTE [Fused cross-attention]: a row with no allowed key (no image yet, or past the last slot)
  // takes q = 0 and sees every key: uniform, and nothing for q or k.
  const auto no_key = text_time.eq(0).logical_or(text_time.gt(t_img)).view({b, 1, l, 1});
  const auto q = splitHeads(projected, heads).masked_fill(no_key, 0.0);
  const auto kv = to_kv->forward(media.reshape({b, t_img * n, media.size(3)})).chunk(2, -1);
  const auto k = splitHeads(kv[0], heads);
  const auto v = splitHeads(kv[1], heads);
  // 0 where visible, lowestFinite elsewhere, built in SDPA's dtype.
  const auto dtype = sdpaDtype(q, k, v);
  const auto opts = torch::TensorOptions().dtype(dtype).device(x.device());
  const auto bias = torch::where(mediaAllowed(text_time, t_img, n).logical_or(no_key), torch::zeros({}, opts),
                                 torch::full({}, lowestFinite(dtype), opts));
  const auto attended =
      sdpaAttention(AttentionKind::kMediaCross, q, k, v, bias, false, 1.0 / std::sqrt(double(head_dim)), 0.0);
  // No image yet: the reference zeroes these rows' probabilities, so their output and its gradient are 0.
  const auto out = mergeHeads(attended).masked_fill(text_time.eq(0).unsqueeze(-1), 0.0);  // (B, L, inner)
  if (!attending.defined()) return to_out->forward(out);
  return unpackTokens(to_out->forward(packTokens(out, attending)), attending, b, l);
}

torch::Tensor MaskedCrossAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& media,
                                                const torch::Tensor& text_time,
                                                const torch::Tensor& attending) {
  // NOTE [Fused attention] in fused_attention.h: SDPA on CUDA, our kernels on the CPU.
  if (runsOnSdpa(AttentionKind::kMediaCross, x)) return fused(x, media, text_time, attending);
  const bool fp32 = x.device().is_cpu() && x.scalar_type() == torch::kFloat &&
                    media.scalar_type() == torch::kFloat && to_q->weight.scalar_type() == torch::kFloat &&
                    !at::autocast::is_autocast_enabled(c10::DeviceType::CPU);
  if (attending.defined() && fp32) {
    // NOTE [Slot attention]: each attending token against its own slot's latents only.
    TORCH_CHECK(media.dim() == 4, "MaskedCrossAttention: expected media (B, T_img, n, D), got ",
                media.sizes());
    const auto t_img = media.size(1);
    const auto n = media.size(2);
    const auto q = to_q->forward(norm->forward(packTokens(x, attending)));
    const auto kv = to_kv->forward(media.reshape({-1, media.size(3)})).chunk(2, -1);
    const auto out = slotAttention(q, kv[0], kv[1], heads, n, 1.0 / std::sqrt(double(head_dim)),
                                   slotRuns(attending, text_time, t_img));
    return unpackTokens(to_out->forward(out), attending, x.size(0), x.size(1));
  }
  torch::Tensor v;
  const auto attn = probabilities(x, media, text_time, attending, &v);
  const auto out = mergeHeads(torch::matmul(attn, v));  // (B, L, inner)
  if (!attending.defined()) return to_out->forward(out);
  return unpackTokens(to_out->forward(packTokens(out, attending)), attending, x.size(0), x.size(1));
}

torch::Tensor MaskedCrossAttentionImpl::attentionWeights(const torch::Tensor& x, const torch::Tensor& media,
                                                         const torch::Tensor& text_time) {
  return probabilities(x, media, text_time, {}, nullptr);
}

// ---------------------------------------------------------------- gated block

GatedCrossAttentionBlockImpl::GatedCrossAttentionBlockImpl(GatedCrossAttentionOptions opts)
    : options(std::move(opts)) {
  attn_gate = register_parameter("attn_gate", torch::zeros({1}));
  ff_gate = register_parameter("ff_gate", torch::zeros({1}));
  attn = register_module("attn", MaskedCrossAttention(options));
  ff = register_module("ff", FeedForward(options.dim(), options.ff_mult()));
}

int64_t GatedCrossAttentionBlockImpl::workPerToken(const GatedCrossAttentionOptions& o) {
  return o.dim() * o.heads() * o.head_dim();
}

torch::Tensor GatedCrossAttentionBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& media,
                                                    const torch::Tensor& text_time,
                                                    const torch::Tensor& real_tokens,
                                                    const torch::Tensor* given) {
  const auto attending = given != nullptr
                             ? *given
                             : attendingTokens(text_time, real_tokens, media.size(1), workPerToken(options));
  const auto h = attn->forward(x, media, text_time, attending) * attn_gate.tanh() + x;
  const auto f = onRealTokens(h, real_tokens, [this](const torch::Tensor& t) { return ff->forward(t); });
  return f * ff_gate.tanh() + h;
}

}  // namespace fs::model
