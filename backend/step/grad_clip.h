// Gradient clipping by the global L2 norm, as torch.nn.utils.clip_grad_norm_.
//
// norm = || (||g_1||, ..., ||g_n||) ||_2 over every parameter with a gradient;
// coef = min(1, max_norm / (norm + 1e-6)); every gradient is multiplied by
// coef (also when coef is 1, as torch does). Norms of non-float32 gradients
// are accumulated in float32 (torch would stay in the gradient's dtype).
//
// A non-finite norm is reported, and by default the gradients are left
// alone (the step should be skipped); `referenceNonFinite` multiplies them by
// the NaN / 0 coefficient exactly as torch does. The per-FSDP-unit variant of
// the reference lives with the FSDP code, not here.
//
// Thread-safety: mutates the gradients; one thread.
#pragma once

#include <torch/types.h>

#include <vector>

namespace fs::step {

struct ClipOptions {
  double maxNorm = 1.0;  // <= 0: measure only, never clip
  bool referenceNonFinite = false;
};

struct ClipResult {
  double norm = 0;  // the total norm before clipping
  double coef = 1;  // what the gradients were multiplied by (1 when untouched)
  bool finite = true;
  bool clipped = false;  // coef < 1 was applied
};

ClipResult clipGradNorm(const std::vector<torch::Tensor>& params, const ClipOptions& options = {});

// The total norm only; gradients untouched. 0 when no parameter has one.
double globalGradNorm(const std::vector<torch::Tensor>& params);

}  // namespace fs::step
