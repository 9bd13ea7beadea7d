// The gated block's cross-attention over packed attending tokens, each
// against the n latents of the one media slot it refers to.
//
// NOTE [Slot attention]: OpenFlamingo's masked cross-attention computes
// every text token's logits against all T_img x n media latents of its
// sample, then masks all but the n of the slot its text_time names (NOTE
// [Media masking]); masked logits become exact zeros after the softmax. On
// the attending tokens (NOTE [Attending tokens]) that is a softmax over those
// n logits alone. Text_time never decreases along a sample, so the tokens of
// one (sample, slot) are one run of consecutive packed rows: per run and
// head, BLAS computes the (run x n) logits and the output, and the backward
// is the softmax's closed form, as NOTE [Packed attention] does for
// self-attention. Against the masked path this drops the (B, H, L, T_img n)
// logits (a third of them on MMC4's three slots), the two mask fills, the
// max subtraction and the scatter of q to (B, L) and back. Values equal the
// masked path's up to float summation order (slot_attention_test).
// fp32 CPU only; the caller falls back to the masked path otherwise.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace fs::model {

// A run of consecutive packed rows that attends to one media slot.
struct SlotRun {
  int64_t row = 0;   // first packed row
  int64_t rows = 0;  // rows in the run
  int64_t slot = 0;  // flat slot index b * T_img + (text_time - 1)
};

// The runs of `attending` (flat (B L) indices, increasing) given text_time
// (B, L), every attending token's text_time in 1..slots.
std::vector<SlotRun> slotRuns(const at::Tensor& attending, const at::Tensor& text_time, int64_t slots);

// Whether slotAttention handles these tensors: fp32 on the CPU.
bool slotAttentionSupports(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// q (P, H*D) packed attending rows; k, v (S * n, H*D): slot s owns rows
// s*n .. s*n+n-1. Returns (P, H*D): per run and head softmax(scale q k^T) v
// over its slot's n keys. Differentiable in q, k and v.
at::Tensor slotAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t heads,
                         int64_t latents, double scale, const std::vector<SlotRun>& runs);

}  // namespace fs::model
