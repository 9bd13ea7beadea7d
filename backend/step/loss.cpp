#include "backend/step/loss.h"

#include <torch/torch.h>

#include "backend/step/labels.h"

namespace fs::step {

namespace {

LmLoss crossEntropy(const torch::Tensor& logits, const torch::Tensor& labels, int64_t targets,
                    const LossOptions& options) {
  LmLoss out;
  out.targets = targets;
  out.noTargets = out.targets == 0;
  namespace F = torch::nn::functional;
  if (out.noTargets && !options.referenceNaN) {
    // Sum over no targets: an exact 0 in the graph, no 0/0.
    out.loss = F::cross_entropy(
        logits, labels, F::CrossEntropyFuncOptions().ignore_index(kIgnoreIndex).reduction(torch::kSum));
    return out;
  }
  out.loss = F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().ignore_index(kIgnoreIndex));
  return out;
}

}  // namespace

LmLoss causalLmLoss(const torch::Tensor& logits, const torch::Tensor& labels, const LossOptions& options) {
  TORCH_CHECK(logits.dim() == 3 && logits.is_floating_point(),
              "causalLmLoss: logits must be (B, L, V) floating, got ", logits.sizes(), " ",
              logits.scalar_type());
  TORCH_CHECK(labels.dim() == 2 && labels.size(0) == logits.size(0) && labels.size(1) == logits.size(1),
              "causalLmLoss: labels ", labels.sizes(), " do not match logits ", logits.sizes());
  const int64_t V = logits.size(2);
  const int64_t L = logits.size(1);
  const auto shiftLogits =
      logits.slice(1, 0, std::max<int64_t>(0, L - 1)).reshape({-1, V}).to(torch::kFloat32);
  const auto shiftLabels = labels.slice(1, 1).reshape({-1}).to(torch::kInt64);

  const int64_t targets =
      options.targets >= 0 ? options.targets : shiftLabels.ne(kIgnoreIndex).sum().item<int64_t>();
  return crossEntropy(shiftLogits, shiftLabels, targets, options);
}

LmLoss lmLossAtTargets(const torch::Tensor& logits, const torch::Tensor& targets,
                       const LossOptions& options) {
  TORCH_CHECK(logits.dim() == 2 && logits.is_floating_point(),
              "lmLossAtTargets: logits must be (P, V) floating, got ", logits.sizes(), " ",
              logits.scalar_type());
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == logits.size(0), "lmLossAtTargets: targets ",
              targets.sizes(), " do not match logits ", logits.sizes());
  TORCH_CHECK(options.targets < 0 || options.targets == targets.size(0), "lmLossAtTargets: ", targets.size(0),
              " targets given, but the options count ", options.targets);
  return crossEntropy(logits.to(torch::kFloat32), targets.to(torch::kInt64), targets.size(0), options);
}

}  // namespace fs::step
