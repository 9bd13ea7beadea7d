// LayerNorm through ATen's own kernels, run on the calling thread when the
// input is small.
//
// NOTE [Small layer norms]: LibTorch 1.13's CPU layer_norm forward and
// backward split their rows over the OpenMP threads with a grain of one row,
// so every call opens a parallel region however small the input. Under
// OMP_WAIT_POLICY=PASSIVE each region wakes a sleeping thread (a futex
// round trip). The tiny preset at 2 threads opened ~120 regions a step,
// 80 of them layer norms (perf probe on GOMP_parallel), and ran slower than
// at 1 thread (8.2-10.4 against 6.6-6.9 ms a step). Inputs of at most
// kSerialLayerNormElements elements therefore run the same kernels with the
// calling thread's OpenMP thread count set to 1 for the call: identical
// arithmetic per row; the weight and bias gradients are summed over rows in
// one partition instead of one per thread, as at 1 thread. Larger inputs go
// to ATen unchanged. The autograd node saves what ATen's saves (input, mean,
// rstd, weight, bias), so activation memory is unchanged.
//
// Thread-safety: as ATen's layer_norm.
#pragma once

#include <torch/types.h>

namespace fs::model {

inline constexpr int64_t kSerialLayerNormElements = 1 << 15;  // ATen's GRAIN_SIZE

// torch::layer_norm over the last dimension (weight and bias may be undefined).
torch::Tensor layerNorm(const torch::Tensor& x, int64_t dim, const torch::Tensor& weight,
                        const torch::Tensor& bias, double eps);

}  // namespace fs::model
