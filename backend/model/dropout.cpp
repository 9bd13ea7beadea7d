#include "backend/model/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <mutex>

namespace fs::model {
namespace {

inline uint64_t splitMix64(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t seedFromDefaultGenerator() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get<at::CPUGeneratorImpl>()->random64();
}

}  // namespace

bool dropoutKeeps(uint64_t seed, uint64_t index, uint64_t keep_threshold) {
  return (splitMix64(seed, index) >> 32) < keep_threshold;
}

at::Tensor applyDropout(const at::Tensor& x, double p, bool training) {
  TORCH_CHECK(p >= 0.0 && p <= 1.0, "dropout probability must lie in [0, 1], got ", p);
  if (!training || p == 0.0) return x;
  if (p == 1.0 || !x.device().is_cpu() || x.scalar_type() != torch::kFloat) return torch::dropout(x, p, true);
  const uint64_t seed = seedFromDefaultGenerator();
  const auto threshold = static_cast<uint64_t>(std::llround((1.0 - p) * 4294967296.0));
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  auto noise = torch::empty(x.sizes(), x.options());
  float* out = noise.data_ptr<float>();
  // Indices, not threads, pick each decision: the mask is the same at any thread count.
  at::parallel_for(0, noise.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      out[i] = dropoutKeeps(seed, static_cast<uint64_t>(i), threshold) ? scale : 0.0f;
    }
  });
  return x * noise;
}

}  // namespace fs::model
