#include "backend/train/embedding_mask.h"

#include <torch/torch.h>

namespace fs::train {

torch::Tensor embeddingRowMask(int64_t rows, const std::vector<int64_t>& keepRows, torch::Dtype dtype,
                               torch::Device device) {
  auto mask = torch::zeros({rows, 1}, torch::TensorOptions().dtype(dtype));
  for (int64_t r : keepRows) {
    TORCH_CHECK(r >= 0 && r < rows, "embedding mask: row ", r, " outside [0, ", rows, ")");
    mask[r][0] = 1;
  }
  return mask.to(device);
}

void maskEmbeddingGrad(const torch::Tensor& weight, const std::vector<int64_t>& keepRows) {
  TORCH_CHECK(weight.dim() == 2, "embedding mask: weight must be (V, D), got ", weight.sizes());
  const auto& grad = weight.grad();
  if (!grad.defined()) return;
  torch::NoGradGuard noGrad;
  grad.mul_(embeddingRowMask(weight.size(0), keepRows, grad.scalar_type(), grad.device()));
}

}  // namespace fs::train
