#include "backend/step/precision.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

namespace fs::step {

protocol::StatusOr<PrecisionPolicy> precisionPolicy(const std::string& name, torch::Device device) {
  PrecisionPolicy p;
  if (name == "fp32") {
    p.precision = Precision::kFp32;
  } else if (name == "bf16") {
    p.precision = Precision::kBf16;
    p.paramDtype = p.inputDtype = torch::kBFloat16;
  } else if (name == "amp_bf16") {
    p.precision = Precision::kAmpBf16;
    p.autocast = true;
    p.autocastDtype = torch::kBFloat16;
  } else if (name == "fp16") {
    p.precision = Precision::kFp16;
    p.paramDtype = p.inputDtype = torch::kFloat16;
    p.lossScaling = p.requiresCuda = true;
  } else if (name == "amp_fp16") {
    p.precision = Precision::kAmpFp16;
    p.autocast = p.lossScaling = p.requiresCuda = true;
    p.autocastDtype = torch::kFloat16;
  } else {
    return protocol::Status::invalidArgument("optim.precision: '" + name +
                                             "' is not one of fp32, bf16, fp16, amp_bf16, amp_fp16");
  }
  if (p.requiresCuda) {
#ifdef FS_WITH_CUDA
    const bool ok = device.is_cuda();
#else
    const bool ok = false;
#endif
    if (!ok) {
      return protocol::Status::unsupported("optim.precision: " + name +
                                           " needs a CUDA build and a CUDA device (CPU autocast supports "
                                           "bfloat16 only); use amp_bf16 or bf16 on CPU");
    }
  }
  return p;
}

AutocastScope::AutocastScope(const PrecisionPolicy& policy, torch::Device device) {
  if (!policy.autocast) return;
  active_ = true;
  device_ = device.is_cuda() ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
  prevEnabled_ = at::autocast::is_autocast_enabled(device_);
  prevDtype_ = at::autocast::get_autocast_dtype(device_);
  at::autocast::set_autocast_enabled(device_, true);
  at::autocast::set_autocast_dtype(device_, policy.autocastDtype);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_, prevEnabled_);
  at::autocast::set_autocast_dtype(device_, prevDtype_);
}

}  // namespace fs::step
