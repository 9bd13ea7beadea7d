#include "backend/trainer/device_choice.h"

#include <torch/cuda.h>

#include "backend/runtime/runtime_info.h"

namespace fs::trainer {

using protocol::Status;

protocol::StatusOr<torch::Device> chooseDevice(const std::string& choice, int64_t localRank,
                                               const DeviceFacts& facts) {
  if (choice == "cpu") return torch::Device(torch::kCPU);
  const bool haveGpu = facts.builtWithCuda && localRank < facts.cudaDevices;
  const auto gpu = [&] { return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(localRank)); };
  if (choice == "auto") return haveGpu ? gpu() : torch::Device(torch::kCPU);
  if (choice != "cuda") {
    return Status::invalidArgument("parallel.device: '" + choice + "' is not one of auto, cpu, cuda");
  }
  if (haveGpu) return gpu();
  const std::string fix = "; set parallel.device=auto or cpu to train on the CPU";
  if (!facts.builtWithCuda) {
    return Status::unsupported(
        "parallel.device is cuda, but this engine was built without CUDA (its LibTorch has no CUDA)" + fix);
  }
  if (facts.cudaDevices == 0) {
    return Status::unsupported("parallel.device is cuda, but no CUDA device is visible to this process" +
                               std::string(" (check the driver and CUDA_VISIBLE_DEVICES)") + fix);
  }
  return Status::unsupported("parallel.device is cuda, but local rank " + std::to_string(localRank) +
                             " has no GPU of its own: this process sees " +
                             std::to_string(facts.cudaDevices) +
                             " CUDA device(s), cuda:0..cuda:" + std::to_string(facts.cudaDevices - 1) +
                             "; start at most that many ranks per node" + fix);
}

DeviceFacts currentDeviceFacts() {
  DeviceFacts f;
  f.builtWithCuda = runtime::builtWithCuda();
  if (f.builtWithCuda) f.cudaDevices = static_cast<int64_t>(torch::cuda::device_count());
  return f;
}

}  // namespace fs::trainer
