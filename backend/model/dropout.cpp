#include "backend/model/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <mutex>

#include "backend/model/intra_op.h"

namespace fs::model {
namespace {

inline uint64_t splitMix64(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

inline bool keeps(uint64_t seed, uint64_t index, uint64_t keep_threshold) {
  return (splitMix64(seed, index) >> 32) < keep_threshold;
}

uint64_t seedFromDefaultGenerator() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get<at::CPUGeneratorImpl>()->random64();
}

}  // namespace

bool dropoutKeeps(uint64_t seed, uint64_t index, uint64_t keep_threshold) {
  return keeps(seed, index, keep_threshold);
}

namespace {

// NOTE [Fused dropout]: one pass writes x * m (m = 1 / (1 - p) or 0, the
// product `x * noise` computed before) and a byte per element for backward,
// instead of a float noise tensor, a multiply and autograd's saved noise.
class DropoutFn : public torch::autograd::Function<DropoutFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, double p) {
    const uint64_t seed = seedFromDefaultGenerator();
    const auto threshold = static_cast<uint64_t>(std::llround((1.0 - p) * 4294967296.0));
    const auto scale = static_cast<float>(1.0 / (1.0 - p));
    const auto input = x.contiguous();
    auto out = torch::empty_like(input);
    auto kept = torch::empty(input.sizes(), input.options().dtype(torch::kUInt8));
    const float* in = input.data_ptr<float>();
    float* o = out.data_ptr<float>();
    uint8_t* k = kept.data_ptr<uint8_t>();
    // Indices, not threads, pick each decision: the mask is the same at any thread count.
    parallelFor(0, input.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const bool keep = keeps(seed, static_cast<uint64_t>(i), threshold);
        k[i] = keep;
        o[i] = in[i] * (keep ? scale : 0.0f);
      }
    });
    ctx->save_for_backward({kept});
    ctx->saved_data["scale"] = static_cast<double>(scale);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto kept = ctx->get_saved_variables()[0];
    const auto scale = static_cast<float>(ctx->saved_data["scale"].toDouble());
    const auto grad = grads[0].contiguous();
    auto out = torch::empty_like(grad);
    const float* g = grad.data_ptr<float>();
    const uint8_t* k = kept.data_ptr<uint8_t>();
    float* o = out.data_ptr<float>();
    parallelFor(0, grad.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = g[i] * (k[i] ? scale : 0.0f);
    });
    return {out, torch::Tensor()};
  }
};

}  // namespace

at::Tensor applyDropout(const at::Tensor& x, double p, bool training) {
  TORCH_CHECK(p >= 0.0 && p <= 1.0, "dropout probability must lie in [0, 1], got ", p);
  if (!training || p == 0.0) return x;
  if (p == 1.0 || !x.device().is_cpu() || x.scalar_type() != torch::kFloat) return torch::dropout(x, p, true);
  return DropoutFn::apply(x, p);
}

}  // namespace fs::model
