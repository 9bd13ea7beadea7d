// Causal self-attention over packed sequences: the real tokens of a batch laid
// end to end, sample after sample, as NOTE [Skipped padding] keeps them.
//
// NOTE [Packed attention]: under right padding (or any padding: what matters
// is that a real query sees exactly the real keys at or before it) the
// reference's masked (B, H, L, L) attention equals, at every real query, a
// causal attention over that sample's real tokens alone: masked logits get
// lowestFinite and softmax turns them into exact zeros. Computing it per
// sample on its n real tokens costs sum(n^2) instead of B L^2 (MMC4 batches:
// about a third), and working on the packed (N, H*D) projections directly
// (BLAS leading dimensions pick a head's columns) drops the scatter to (B, L),
// the head split, the (B, H, L, L) bias add and the head merge the composite
// path pays per layer. Forward and backward call BLAS per (sample, head),
// the blocks in parallel over the intra-op threads (each writes its own rows
// and head columns); the backward is the softmax's closed form (dS = P * (dP - rowsum(P * dP))).
// Probabilities are kept for backward: the same B·H·n² floats the composite
// path's autograd keeps. Real positions get the composite path's values up to
// float summation order (packed_attention_test).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace fs::model {

// Whether packedCausalAttention handles q, k and v with this dropout: all
// three fp32 on the CPU (under CPU autocast a family may hand over fp32 q
// with bf16 k and v), no dropout on the probabilities while training. Other
// cases take the composite path (scaledDotAttention with the causal bias).
bool packedAttentionSupports(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout,
                             bool training);

// q, k, v (N, H*D), rows grouped by sample: sample b owns rows
// [offsets[b], offsets[b+1]) in sequence order (offsets has B+1 entries,
// offsets[0] = 0, offsets[B] = N). Returns (N, H*D): per sample and head,
// softmax(q k^T * scale, causal) v. Differentiable in q, k and v.
at::Tensor packedCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t heads,
                                 double scale, const std::vector<int64_t>& offsets);

// The packed offsets of an attention mask (B, L): cumulative counts of its
// non-zero entries per row, starting at 0.
std::vector<int64_t> packedOffsets(const at::Tensor& attention_mask);

}  // namespace fs::model
