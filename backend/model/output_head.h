// The LM's output head as the trainer's loss reads it: logits at the target
// positions only, and a tied head's weight gradient on the rows that survive
// the embedding-gradient mask only. Stateless; pure functions.
//
// NOTE [Logits at the targets]: the loss reads logits[b, t] only where
// labels[b, t + 1] is a target (NOTE [Label rules] in backend/step/labels.h):
// padding, the last position, the token before each <image>, and MMC4's text
// between an <|endofchunk|> and the next <image> never reach it. Computing
// the (B, L, V) logits anyway costs the head's GEMMs, the log-softmax and
// their backward on those positions, plus a (B, L, V) scatter for the
// unpacking and another for the shift's slice in backward. The trainer
// gives the target positions (picked on the host with the labels); the
// forward gathers their final hidden states and returns (P, V) logits, and
// the loss is the cross-entropy over exactly the targets the reference
// averages over, in the same order.
//
// With a tied head and a trainable embedding, maskEmbeddingGradient (or the
// FSDP row-mask hook) keeps only the <image> and <|endofchunk|> rows of the
// embedding's gradient. The head's weight gradient dlogits^T h, a vocab x
// width x P GEMM, is then computed for those rows only; the other rows are
// zeros that the mask would have made zeros. This holds only when the
// caller masks the gradient afterwards: `weight_rows` undefined computes
// every row (the parity tests compare unmasked gradients).
#pragma once

#include <ATen/core/Tensor.h>

namespace fs::model {

struct LogitSelection {
  at::Tensor positions;    // (P) int64 flat indices into the (B, L) positions, ascending
  at::Tensor weight_rows;  // int64 head-weight rows whose gradient the caller keeps; undefined = all
};

// hidden (N, width) x weight (V, width) -> logits (N, V), as torch::linear
// without bias. Backward: d hidden as linear's; d weight only on
// `weight_rows` (zeros elsewhere) when defined, every row otherwise.
at::Tensor headLogits(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& weight_rows);

}  // namespace fs::model
