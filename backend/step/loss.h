// Causal language-model loss as the Hugging Face heads compute it.
//
// Logits (B, L, V) and labels (B, L): position t predicts label t + 1 (the
// shift happens here), cross-entropy averaged over the targets that are not
// -100 in the whole batch. The loss is computed in float32 whatever the
// logits' dtype, as CUDA autocast does for the reference (cross_entropy runs
// in float32 under autocast).
//
// NOTE [Empty batches]: with no target at all, the reference's mean is 0/0 =
// NaN, and OpenFlamingo then zeroes every gradient of the accumulation window
// and skips the step. By default we return an exact 0 that is still part of
// the graph (its gradients are zero) and set `noTargets`, so the trainer can
// report it and skip only this batch; `referenceNaN` (compat: openflamingo)
// returns the reference's NaN.
//
// Thread-safety: pure function.
#pragma once

#include <torch/types.h>

namespace fs::step {

struct LossOptions {
  bool referenceNaN = false;
  // How many targets the labels hold (labels[:, 1:] != -100), when the caller
  // counted them on the host before the labels went to the device
  // (countTargets in labels.h); -1 counts them here, which reads a value back
  // from the labels' device (a host sync on CUDA).
  int64_t targets = -1;
};

struct LmLoss {
  torch::Tensor loss;  // float32 scalar
  int64_t targets = 0;
  bool noTargets = false;
};

// REQUIRES: logits (B, L, V) floating, labels (B, L) int64 on the same device.
LmLoss causalLmLoss(const torch::Tensor& logits, const torch::Tensor& labels,
                    const LossOptions& options = {});

// The same loss from the logits at the targets only (NOTE [Logits at the
// targets] in backend/model/output_head.h): logits (P, V) and their labels
// (P) as targetsOf picks them, so every row is a target; the same value,
// mean, empty-batch rule and float32 as causalLmLoss.
// REQUIRES: logits (P, V) floating, targets (P) int64 on the same device.
LmLoss lmLossAtTargets(const torch::Tensor& logits, const torch::Tensor& targets,
                       const LossOptions& options = {});

}  // namespace fs::step
