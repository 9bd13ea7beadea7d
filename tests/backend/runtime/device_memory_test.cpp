// runtime::readDeviceMemory against the real CUDA caching allocator, and the planner's model of that
// allocator (NOTE [CUDA caching allocator rules] in backend/fsdp_plan/device_allocator.h) against what the
// allocator really does. On a machine without CUDA only the CPU clause runs; the others skip.
#include "backend/runtime/device_memory.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "backend/fsdp_plan/device_allocator.h"
#include "backend/telemetry/memory_tracker.h"

#ifdef FS_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace fs::runtime {
namespace {

constexpr int64_t kMiB = 1 << 20;

bool haveCuda() {
#ifdef FS_WITH_CUDA
  return torch::cuda::is_available();
#else
  return false;
#endif
}

// The allocator with nothing cached: every segment it holds is in use by a live tensor (none here).
void emptyCache() {
#ifdef FS_WITH_CUDA
  c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

TEST(DeviceMemory, CpuHasNothingToRead) {
  EXPECT_FALSE(readDeviceMemory(torch::Device(torch::kCPU)));
  resetDevicePeaks(torch::Device(torch::kCPU));  // a no-op
}

// One sequence, every tensor kept alive, into an empty allocator: what NOTE [Reserved for a live set]
// replays. Allocated and reserved must be the model's, byte for byte.
TEST(DeviceMemory, CudaAllocatorMatchesThePlannersModel) {
  if (!haveCuda()) GTEST_SKIP() << "no CUDA device";
  const torch::Device cuda(torch::kCUDA, 0);
  emptyCache();
  const DeviceMemory before = *readDeviceMemory(cuda);
  ASSERT_EQ(before.allocated, 0) << "another test left tensors on the device";
  const std::vector<int64_t> sizes = {
      1,        512 << 10, 512 << 10,     512 << 10,  512 << 10,     512 << 10, 6 * kMiB, 6 * kMiB,
      6 * kMiB, 6 * kMiB,  10 * kMiB + 1, 1536 << 10, 11 * kMiB + 1, 700 << 10, kMiB,     kMiB + 1};
  std::vector<torch::Tensor> live;
  for (const int64_t n : sizes)
    live.push_back(torch::empty({n}, torch::TensorOptions(torch::kUInt8).device(cuda)));
  const DeviceMemory after = *readDeviceMemory(cuda);
  const fsdp_plan::DeviceBytes model = fsdp_plan::cudaLiveSet(sizes);
  EXPECT_EQ(after.allocated - before.allocated, model.allocated);
  EXPECT_EQ(after.reserved - before.reserved, model.reserved);
  live.clear();
  emptyCache();
}

// Peaks and their reset, and the memory tracker's phases through the real reader.
TEST(DeviceMemory, CudaPeaksByPhase) {
  if (!haveCuda()) GTEST_SKIP() << "no CUDA device";
  const torch::Device cuda(torch::kCUDA, 0);
  emptyCache();
  telemetry::setDeviceMemoryReader(telemetry::DeviceMemoryReader{
      cuda.str(),
      [cuda] {
        const DeviceMemory m = *readDeviceMemory(cuda);
        return telemetry::DeviceMemoryReading{m.allocated, m.reserved, m.peakAllocated, m.peakReserved};
      },
      [cuda] { resetDevicePeaks(cuda); }});
  const auto opts = torch::TensorOptions(torch::kUInt8).device(cuda);
  torch::Tensor kept;
  {
    telemetry::MemoryPhase params(telemetry::Phase::kParameters);
    kept = torch::empty({kMiB + 1}, opts);  // 1 MiB + 512 allocated, a 20 MiB segment
  }
  {
    telemetry::MemoryPhase acts(telemetry::Phase::kActivations);
    // 24 MiB does not fit the 19 MiB - 512 left in the first segment: its own 24 MiB segment (nothing
    // remains to split), freed at once and kept cached.
    torch::Tensor t = torch::empty({24 * kMiB}, opts);
  }
  const auto s = telemetry::deviceMemorySnapshot();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->device, "cuda:0");
  const auto& p = s->phases[static_cast<size_t>(telemetry::Phase::kParameters)];
  const auto& a = s->phases[static_cast<size_t>(telemetry::Phase::kActivations)];
  EXPECT_EQ(p.allocated, kMiB + 512);
  EXPECT_EQ(p.reserved, 20 * kMiB);
  EXPECT_EQ(a.allocated, kMiB + 512 + 24 * kMiB);
  EXPECT_EQ(a.reserved, 44 * kMiB);
  EXPECT_EQ(s->allocated, kMiB + 512);
  EXPECT_EQ(s->reserved, 44 * kMiB);  // the 24 MiB segment stays cached
  EXPECT_EQ(s->peakAllocated, kMiB + 512 + 24 * kMiB);
  EXPECT_EQ(s->peakReserved, 44 * kMiB);
  telemetry::setDeviceMemoryReader(std::nullopt);
  kept = torch::Tensor();
  emptyCache();
}

}  // namespace
}  // namespace fs::runtime
