#include "backend/model/output_head.h"

#include <torch/torch.h>

namespace fs::model {
namespace {

// t in `dtype`, without an op when it already is.
torch::Tensor as(const torch::Tensor& t, c10::ScalarType dtype) {
  return t.scalar_type() == dtype ? t : t.to(dtype);
}

// NOTE [Logits at the targets] in output_head.h.
class RowMaskedHeadFn : public torch::autograd::Function<RowMaskedHeadFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& hidden,
                               const torch::Tensor& weight, const torch::Tensor& rows) {
    ctx->save_for_backward({hidden, weight, rows});
    return torch::linear(hidden, weight);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& hidden = saved[0];
    const auto& weight = saved[1];
    const auto& rows = saved[2];
    // Under autocast the forward's linear ran in the autocast dtype (the logits'): the products run in it
    // and the gradients go back to the inputs' dtypes, as autograd's casts around linear would take them.
    const auto grad = grads[0].reshape({-1, weight.size(0)});
    const auto dtype = grad.scalar_type();
    torch::Tensor dHidden, dWeight;
    if (ctx->needs_input_grad(0))
      dHidden = as(grad.mm(as(weight, dtype)), hidden.scalar_type()).view(hidden.sizes());
    if (ctx->needs_input_grad(1)) {
      const auto flatHidden = as(hidden.reshape({-1, weight.size(1)}), dtype);
      dWeight = torch::zeros_like(weight);
      dWeight.index_copy_(0, rows, as(grad.index_select(1, rows).t().mm(flatHidden), weight.scalar_type()));
    }
    return {dHidden, dWeight, torch::Tensor()};
  }
};

}  // namespace

at::Tensor headLogits(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& weight_rows) {
  if (!weight_rows.defined() || !weight.requires_grad()) return torch::linear(hidden, weight);
  TORCH_CHECK(weight_rows.scalar_type() == torch::kLong && weight_rows.dim() == 1,
              "headLogits: weight_rows must be a 1-D int64 tensor, got ", weight_rows.sizes(), " ",
              weight_rows.scalar_type());
  return RowMaskedHeadFn::apply(hidden, weight, weight_rows);
}

}  // namespace fs::model
