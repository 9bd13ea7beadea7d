#include "backend/model/layer_norm.h"

#include <omp.h>
#include <torch/torch.h>

namespace fs::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// OpenMP's thread count is a per-thread setting: this changes only the
// calling thread's next parallel regions, and only for the scope.
class SerialScope {
 public:
  SerialScope() : previous_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~SerialScope() { omp_set_num_threads(previous_); }
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;

 private:
  int previous_;
};

class SerialLayerNormFn : public torch::autograd::Function<SerialLayerNormFn> {
 public:
  // Custom functions take no undefined tensors: a missing bias arrives as an empty one.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& biasOrEmpty, int64_t dim, double eps, bool hasBias) {
    SerialScope serial;
    const torch::Tensor bias = hasBias ? biasOrEmpty : torch::Tensor();
    auto [out, mean, rstd] = at::native_layer_norm(x, {dim}, weight, bias, eps);
    ctx->save_for_backward({x, mean, rstd, weight, bias});
    ctx->saved_data["dim"] = dim;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const int64_t dim = ctx->saved_data["dim"].toInt();
    const std::array<bool, 3> mask = {ctx->needs_input_grad(0),
                                      saved[3].defined() && ctx->needs_input_grad(1),
                                      saved[4].defined() && ctx->needs_input_grad(2)};
    SerialScope serial;
    auto [dx, dw, db] = at::native_layer_norm_backward(grads[0].contiguous(), saved[0], {dim}, saved[1],
                                                       saved[2], saved[3], saved[4], mask);
    return {dx, dw, db, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor layerNorm(const torch::Tensor& x, int64_t dim, const torch::Tensor& weight,
                        const torch::Tensor& bias, double eps) {
  const bool small = x.device().is_cpu() && x.numel() <= kSerialLayerNormElements && x.is_contiguous() &&
                     omp_get_max_threads() > 1;
  if (!small) return torch::layer_norm(x, {dim}, weight, bias, eps);
  const bool hasBias = bias.defined();
  return SerialLayerNormFn::apply(x, weight, hasBias ? bias : torch::empty({0}, x.options()), dim, eps,
                                  hasBias);
}

}  // namespace fs::model
