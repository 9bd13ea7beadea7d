// Dropout for the model's blocks.
//
// NOTE [Dropout]: LibTorch 1.13's CPU dropout draws every element's Bernoulli
// from the default generator one call at a time (`bernoulli_`, ~10 ns an
// element: 4-5 % of a small-preset step, the same in PyTorch eager). Here one
// 64-bit seed is drawn from that generator per call and each element's keep
// decision is a counter-based hash of (seed, element index) (SplitMix64's
// finaliser), compared against (1 - p) * 2^32; kept elements are scaled by
// 1 / (1 - p), as `torch::dropout`. The distribution is dropout's; the masks
// differ from `torch::dropout`'s stream but are as reproducible: they depend
// only on the generator's state (seeding, checkpoints and activation
// checkpointing's saved RNG state all keep working) and not on the thread
// count. Inputs other than fp32 CPU tensors take `torch::dropout`. NOTE
// [Fused dropout] in dropout.cpp: one pass, a byte per element kept for
// backward.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace fs::model {

// x when not training or p == 0; otherwise x * mask / (1 - p) with mask ~
// Bernoulli(1 - p) per element (NOTE [Dropout]). p must lie in [0, 1].
at::Tensor applyDropout(const at::Tensor& x, double p, bool training);

// The keep decision of element `index` under `seed` for keep probability
// `keep_threshold` / 2^32 (exposed for the distribution test).
bool dropoutKeeps(uint64_t seed, uint64_t index, uint64_t keep_threshold);

}  // namespace fs::model
