// Flamingo's gated cross-attention: text tokens attend to the resampled
// visual tokens of "their" image, through tanh gates that start at 0.
//
// Parameters (under `...layers.{i}.gated_cross_attn_layer.`): attn_gate,
// ff_gate (own parameters first), attn.{norm, to_q, to_kv, to_out},
// ff.{0, 1, 3}.
//
// NOTE [Media masking]: text_time = cumsum(input_ids == <image>) along the
// sequence, so the <image> token itself has the time of its own image. Text
// position i may attend the latents of image j (1-based) iff
// text_time[i] == j ("only the immediately preceding image"). Masked logits
// are filled with lowestFinite(dtype) (-finfo.max, not -inf), the row max is
// subtracted (detached), softmax; then rows with text_time == 0 (no image yet)
// are set to zero, so those positions get no visual signal at all. A row whose
// text_time exceeds the number of images is fully masked and so attends
// uniformly to every latent of every image (the reference's behaviour). The
// text attention mask is not used here.
//
// Thread-safety: one forward at a time per instance (LibTorch modules).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "backend/model/common.h"

namespace fs::protocol {
struct CrossAttnConfig;
}

namespace fs::model {

struct GatedCrossAttentionOptions {
  GatedCrossAttentionOptions(int64_t dim, int64_t dim_visual) : dim_(dim), dim_visual_(dim_visual) {}
  TORCH_ARG(int64_t, dim);         // LM width
  TORCH_ARG(int64_t, dim_visual);  // vision width (the resampler's dim)
  TORCH_ARG(int64_t, heads) = 8;
  TORCH_ARG(int64_t, head_dim) = 64;
  TORCH_ARG(int64_t, ff_mult) = 4;

 public:
  static GatedCrossAttentionOptions fromConfig(int64_t lm_width, int64_t vision_width,
                                               const protocol::CrossAttnConfig& config);
};

// text_time (B, L) int64 from input ids: cumsum(input_ids == image_id).
torch::Tensor mediaTextTime(const torch::Tensor& input_ids, int64_t image_id);

// NOTE [Attending tokens]: a text token without a preceding <image>
// (text_time 0) gets exactly zero from the cross-attention (its
// probabilities are zeroed and to_out has no bias), and a padded position's
// result never reaches a real position (NOTE [Skipped padding] in common.h).
// So the attention's norm, to_q and to_out run on the real tokens with
// text_time >= 1 only, packed; the others get zeros. The attention itself
// stays (B, heads, L, T_img n) as OpenFlamingo computes it. A row with more
// <image> tokens than slots has text that attends uniformly to every slot
// (NOTE [Media masking]); any such real token keeps every position.
// The flat (B L) indices of the positions that need the cross-attention's
// result; undefined when every position does, or when leaving the others
// out does not pay for work_per_token (skippingPays in common.h; 0: always
// pays). real_tokens: NOTE [Skipped padding], undefined = every position real.
torch::Tensor attendingTokens(const torch::Tensor& text_time, const torch::Tensor& real_tokens, int64_t slots,
                              int64_t work_per_token = 0);

// NOTE [Fused cross-attention]: forward() picks the path per call (NOTE
// [Fused attention] in fused_attention.h). On the CPU: NOTE [Slot attention]
// for fp32 with attending tokens, else the masked composite (probabilities()).
// Through SDPA (CUDA), the mask of NOTE [Media masking] (text position i sees
// media token j iff text_time[i] is j's slot) is no causal pattern, so it is
// an attn_mask, (B, 1, L, T_img n), broadcast over the heads; SDPA then picks
// memory-efficient attention (or math), never flash, which takes no mask.
// It is additive, 0 or lowestFinite of SDPA's dtype, as the reference fills
// its logits. A row with no allowed key (text_time 0, or past the last slot)
// needs more, because the fused kernels keep only a log-sum-exp per row for
// backward: with every key at lowestFinite, log(T_img n) is lost to rounding
// in it, and the backward's probabilities come out 1 instead of 1 / (T_img n).
// (A boolean mask is no way out: -inf rows give zeros or NaN.) Such a row
// instead sees every key with q = 0, a constant: its probabilities are
// uniform, as the reference's, with an exact log-sum-exp; q and k get nothing
// from it, as from the reference, whose masked_fill gives masked logits no
// gradient; v gets the reference's gradient. Rows with text_time 0 are then
// zeroed on the output (the reference zeroes their probabilities); rows past
// the last slot keep their uniform average of every slot. With attending
// tokens, q is computed on them alone and scattered to (B, L) as on the
// masked path; the slot kernel's saving (each run against its own slot's n
// latents only) has no dense-mask form.
class MaskedCrossAttentionImpl : public torch::nn::Module {
 public:
  explicit MaskedCrossAttentionImpl(const GatedCrossAttentionOptions& options);

  // x (B, L, dim), media (B, T_img, n, dim_visual), text_time (B, L) ->
  // (B, L, dim). See NOTE [Media masking]. attending: flat indices into the
  // (B, L) positions that need the result (attendingTokens); the others get
  // zeros and their norm and projections are skipped. Undefined: every position.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& media, const torch::Tensor& text_time,
                        const torch::Tensor& attending = {});
  // The attention probabilities (B, heads, L, T_img * n) the forward uses (tests, inspection).
  torch::Tensor attentionWeights(const torch::Tensor& x, const torch::Tensor& media,
                                 const torch::Tensor& text_time);

  int64_t heads;
  int64_t head_dim;
  Norm norm{nullptr};
  torch::nn::Linear to_q{nullptr};
  torch::nn::Linear to_kv{nullptr};
  torch::nn::Linear to_out{nullptr};

 private:
  // The SDPA path of forward() (NOTE [Fused cross-attention]).
  torch::Tensor fused(const torch::Tensor& x, const torch::Tensor& media, const torch::Tensor& text_time,
                      const torch::Tensor& attending);
  torch::Tensor probabilities(const torch::Tensor& x, const torch::Tensor& media,
                              const torch::Tensor& text_time, const torch::Tensor& attending,
                              torch::Tensor* v_out);
  // Checks the shapes and projects the text to q (B, L, inner), both paths' first step.
  torch::Tensor projectedQuery(const torch::Tensor& x, const torch::Tensor& media,
                               const torch::Tensor& text_time, const torch::Tensor& attending);
};
TORCH_MODULE(MaskedCrossAttention);

// x + tanh(attn_gate) * attn(x), then + tanh(ff_gate) * ff(x). Both gates
// have shape [1] and start at 0, so a new block is the identity.
class GatedCrossAttentionBlockImpl : public torch::nn::Module {
 public:
  explicit GatedCrossAttentionBlockImpl(GatedCrossAttentionOptions options);
  // real_tokens: NOTE [Skipped padding] in common.h (the feed-forward part)
  // and NOTE [Attending tokens] (the attention part). attending: the
  // attending tokens picked by the caller (NOTE [Index sets from the host] in
  // common.h); null = picked here.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& media, const torch::Tensor& text_time,
                        const torch::Tensor& real_tokens = {}, const torch::Tensor* attending = nullptr);
  // One projection's multiply-adds per position: attendingTokens' work_per_token (NOTE [When skipping pays]).
  static int64_t workPerToken(const GatedCrossAttentionOptions& options);

  GatedCrossAttentionOptions options;
  torch::Tensor attn_gate;
  torch::Tensor ff_gate;
  MaskedCrossAttention attn{nullptr};
  FeedForward ff{nullptr};
};
TORCH_MODULE(GatedCrossAttentionBlock);

}  // namespace fs::model
