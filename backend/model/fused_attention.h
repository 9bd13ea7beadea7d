// Where the model's attention runs: PyTorch's fused scaled-dot-product
// attention (SDPA) on CUDA, our own kernels on the CPU.
//
// NOTE [Fused attention]: every attention kind the model trains through has
// one function that picks its path per call (NOTE [Fused self-attention] in
// lm_family.h, NOTE [Fused resampler attention] in perceiver.h, NOTE [Fused
// cross-attention] in gated_cross_attention.h):
//  - CUDA, any dtype: at::scaled_dot_product_attention. In PyTorch's
//    default order it picks flash attention where there is no attn_mask
//    (is_causal may be set) and the inputs are bf16 / fp16, else
//    memory-efficient attention (fp32 too, and it adds an arbitrary bias),
//    else its composite math path. Neither fused kernel keeps the (L, S)
//    probabilities for backward, only a log-sum-exp per row.
//  - CPU (and meta, where wrong_device_test runs the step): the kernels that
//    were there before (NOTE [Packed attention], NOTE [Slot attention], the
//    composite scaledDotAttention / masked softmax), unchanged.
// Masks are handed to SDPA as the model builds them, additive and finite:
// masked logits get lowestFinite of the dtype SDPA computes in (NOTE [Causal
// mask], NOTE [Media masking]). Never a boolean mask, never -inf: SDPA turns
// false into -inf, and a row with nothing visible then gives zeros (its math
// path) or NaN (kernels without that guard) instead of the reference's
// uniform row. Such a row's forward is uniform with the finite mask too, but
// the fused kernels' backward recomputes the probabilities from one
// log-sum-exp per row, in which lowestFinite swallows log(keys): they come
// out 1, not 1 / keys. So a kind whose gradients cross such rows must not
// hand them over fully masked (NOTE [Fused cross-attention]). The dtype SDPA
// computes in is autocast's where autocast is on for the device (SDPA is on
// autocast's lower-precision list): q, k, v and the bias are cast here, the
// bias clamped to that dtype's lowestFinite first, because fp32's lowest
// rounds to -inf in bf16.
//
// Dropout on the probabilities goes to SDPA's dropout_p. The fused kernels
// draw it in-kernel from the device's default generator (Philox: a seed and
// an offset taken per call), the math path through at::dropout; neither is
// the CPU path's counter-based mask (NOTE [Dropout]). So with attention
// dropout the SDPA path has the same distribution as the CPU path and is as
// reproducible (same seed, same masks; activation checkpointing restores the
// CUDA generator before recomputing, so the recomputed masks equal the
// forward's), but is not bit-exact against it, nor across SDPA backends. The
// comparisons (fused_attention_test, fused_attention_gpu_test) run without
// dropout. Today that case does not arise in training: the reference applies
// attention dropout in train mode only where the family has it (OPTAttention,
// MPT's attn_pdrop), with p = 0 in the configs of the LMs OpenFlamingo uses,
// which are the family defaults here (LmOptions); OPT's 0.1 is on the
// residual stream (applyDropout, outside the attention), and no config field
// reaches LmOptions::attention_dropout.
//
// Tests hold the SDPA path to the CPU kernels on the CPU (fused_attention_test)
// through ScopedSdpaOnCpu below: a process-wide switch for tests only, which
// no config, CLI flag or environment variable reaches.
//
// Thread-safety: the functions are pure apart from the tests' switch and
// log, which are atomic / locked.
#pragma once

#include <ATen/SDPBackend.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace fs::model {

// The model's attention kinds, each with its own path choice.
enum class AttentionKind {
  kCausalSelf,  // the LM's decoder layers (every family)
  kResampler,   // the Perceiver's latents over [media; latents]
  kMediaCross,  // the gated block's text over its image slot's latents
};

// Whether attention of `kind` on q's device runs through SDPA: on CUDA
// always; on the CPU only inside a ScopedSdpaOnCpu naming the kind.
bool runsOnSdpa(AttentionKind kind, const at::Tensor& q);

// The dtype SDPA computes in for q, k and v (NOTE [Fused attention]):
// autocast's where it is on for q's device, else their common dtype. A
// caller that builds its bias in it spares sdpaAttention the cast.
c10::ScalarType sdpaDtype(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// softmax(q k^T * scale + bias) v through at::scaled_dot_product_attention,
// with the dtype, bias and dropout handling of NOTE [Fused attention].
// q (..., Lq, D), k and v (..., Lk, D) with the same leading dims (4-D for
// the fused kernels); bias additive, broadcastable to (..., Lq, Lk), or
// undefined. causal: key j visible to query i iff j <= i (top-left aligned);
// REQUIRES an undefined bias then. dropout: the probability to apply (0 when
// not training). Returns (..., Lq, D) in the compute dtype.
at::Tensor sdpaAttention(AttentionKind kind, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const at::Tensor& bias, bool causal, double scale, double dropout);

// The backend at::scaled_dot_product_attention picks for these arguments
// (after sdpaAttention's casts), as the device's selection rules say.
at::SDPBackend sdpaBackend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& bias, bool causal, double dropout);

// ---------------------------------------------------------------- tests only

// While alive, the kinds named run through SDPA on the CPU too, so the code
// that runs on CUDA runs in CPU tests. Process-wide; one at a time.
class ScopedSdpaOnCpu {
 public:
  explicit ScopedSdpaOnCpu(const std::vector<AttentionKind>& kinds = {AttentionKind::kCausalSelf,
                                                                      AttentionKind::kResampler,
                                                                      AttentionKind::kMediaCross});
  ~ScopedSdpaOnCpu();
  ScopedSdpaOnCpu(const ScopedSdpaOnCpu&) = delete;
  ScopedSdpaOnCpu& operator=(const ScopedSdpaOnCpu&) = delete;

 private:
  unsigned previous_;
};

// One sdpaAttention call as ScopedSdpaLog records it.
struct SdpaCall {
  AttentionKind kind;
  at::SDPBackend backend;  // what SDPA picks for it (sdpaBackend)
  bool causal;             // is_causal
  bool masked;             // an attn_mask
};

// While alive, records each sdpaAttention call (computing the backend costs
// a little host time, so only while recording). Process-wide; one at a time.
class ScopedSdpaLog {
 public:
  ScopedSdpaLog();
  ~ScopedSdpaLog();
  ScopedSdpaLog(const ScopedSdpaLog&) = delete;
  ScopedSdpaLog& operator=(const ScopedSdpaLog&) = delete;
  std::vector<SdpaCall> calls() const;
};

}  // namespace fs::model
