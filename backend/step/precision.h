// Numeric precision of a run (optim.precision) and the autocast scope.
//
//   fp32      float32 weights, activations, gradients and optimizer state.
//   bf16      bfloat16 weights and images (token ids stay int64, which the
//             reference's cast breaks: its bf16 / fp16 flags crash).
//   amp_bf16  float32 weights and optimizer; forward and loss under bf16
//             autocast; no loss scaling. On CPU this is LibTorch's CPU
//             autocast (at::autocast::set_cpu_enabled / set_autocast_cpu_dtype),
//             on CUDA the GPU one, as the reference's torch.cuda.amp.autocast.
//   fp16      float16 weights (AdamW steps float32 masters: NOTE [Float32
//             master weights] in optimizer.h), dynamic loss scaling. CUDA only.
//   amp_fp16  fp16 autocast, dynamic loss scaling.       CUDA only.
// CPU autocast in LibTorch 1.13 supports bfloat16 only; fp16 needs a CUDA
// build (FS_WITH_CUDA) and a CUDA device. The loss is always computed in
// float32 (see loss.h).
//
// Thread-safety: autocast state is thread-local; an AutocastScope affects the
// thread that created it only.
#pragma once

#include <torch/types.h>

#include <string>

#include "backend/protocol/status.h"

namespace fs::step {

enum class Precision { kFp32, kBf16, kFp16, kAmpBf16, kAmpFp16 };

struct PrecisionPolicy {
  Precision precision = Precision::kFp32;
  torch::Dtype paramDtype =
      torch::kFloat32;  // weights and AdamW state (FSDP's shards: fsdp_plan's weight dtype)
  torch::Dtype inputDtype = torch::kFloat32;  // what images are cast to
  bool autocast = false;
  torch::Dtype autocastDtype = torch::kBFloat16;
  bool lossScaling = false;  // use a GradScaler
  bool requiresCuda = false;
};

// "fp32" | "bf16" | "fp16" | "amp_bf16" | "amp_fp16" for `device`. An unknown
// name, or an fp16 mode without a CUDA build and device, is an error naming
// optim.precision.
protocol::StatusOr<PrecisionPolicy> precisionPolicy(const std::string& name, torch::Device device);

// RAII: enables autocast for `device` with the policy's dtype when the policy
// asks for it (else does nothing), restoring the previous state on exit.
// Leaving the outermost scope clears the autocast cast cache, as Python does.
class AutocastScope {
 public:
  AutocastScope(const PrecisionPolicy& policy, torch::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_ = c10::DeviceType::CPU;
  bool prevEnabled_ = false;
  at::ScalarType prevDtype_ = at::kBFloat16;
};

}  // namespace fs::step
