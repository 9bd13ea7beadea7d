// Which device a rank trains on: parallel.device resolved against what this
// process has (a CUDA build, how many GPUs) and the rank's place on its node.
//
// NOTE [Device choice]: one device per rank. `cpu` is the host; `cuda` is
// cuda:<local rank>, the GPU of the same index on the rank's node (the
// launchers start one rank per GPU, node by node), and fails when the engine
// was built without CUDA, sees no GPU, or has fewer GPUs than ranks on the
// node; `auto` is cuda:<local rank> when a GPU for that local rank exists and
// the host otherwise (OpenFlamingo's train.py takes cuda:<local rank>
// whenever CUDA is available). The choice is a pure function of its inputs so
// every case is tested on a CPU-only machine (device_choice_test); the
// trainer asks LibTorch for the facts (runtime::builtWithCuda,
// torch::cuda::device_count) and calls it once at set-up.
//
// Thread-safety: pure function.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "backend/protocol/status.h"

namespace fs::trainer {

struct DeviceFacts {
  bool builtWithCuda = false;  // FS_WITH_CUDA: the LibTorch linked has CUDA
  int64_t cudaDevices = 0;     // torch::cuda::device_count() (0 when not built with CUDA)
};

// `choice` is parallel.device (auto | cpu | cuda); `localRank` the rank's index on its node.
// REQUIRES: localRank >= 0. An unknown choice is an invalid-argument status naming parallel.device.
protocol::StatusOr<torch::Device> chooseDevice(const std::string& choice, int64_t localRank,
                                               const DeviceFacts& facts);

// The facts of this process: runtime::builtWithCuda() and, with it, torch::cuda::device_count().
DeviceFacts currentDeviceFacts();

}  // namespace fs::trainer
