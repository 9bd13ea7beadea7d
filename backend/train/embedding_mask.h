// The input-embedding gradient row mask: of the whole trainable embedding
// matrix only the rows of the added tokens (<image>, <|endofchunk|>) change.
//
// After backward (and before clipping) the gradient is multiplied by a mask
// that is 1 on those rows and 0 elsewhere, exactly as the reference does
// (grad * mask, so a NaN in a masked row stays NaN, as there). With weight
// decay 0 on the embedding (see optimizer.h) and a zero gradient, AdamW then
// leaves the other rows unchanged only while their moments are zero: they
// are, because their gradients have always been masked.
//
// Thread-safety: mutates the gradient; one thread.
#pragma once

#include <torch/types.h>

#include <vector>

namespace fs::train {

// (rows, 1) mask of `dtype` on `device`: 1 on `keepRows`, 0 elsewhere.
// REQUIRES: every row in [0, rows).
torch::Tensor embeddingRowMask(int64_t rows, const std::vector<int64_t>& keepRows, torch::Dtype dtype,
                               torch::Device device);

// Multiplies weight.grad() by the row mask; no-op without a gradient.
// REQUIRES: weight (V, D).
void maskEmbeddingGrad(const torch::Tensor& weight, const std::vector<int64_t>& keepRows);

}  // namespace fs::train
