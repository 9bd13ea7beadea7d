// NOTE [Device memory by phase] (memory_tracker.h): each MemoryPhase boundary credits the device's peak since
// the previous boundary to the device's phase. This machine has no CUDA device, so the device here is a test
// double: FakeDevice keeps counters the way the CUDA caching allocator's statistics behave (a peak that
// follows the current value upward and drops to it on reset). It stands in for the device only; the tracker,
// its scopes and the memory event's fields are the real ones. The CUDA reader itself
// (backend/runtime/device_memory.cpp) is exercised on a GPU machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "backend/telemetry/memory_tracker.h"

namespace fs::telemetry {
namespace {

struct FakeDevice {
  DeviceMemoryReading stats;
  int resets = 0;
  void set(std::int64_t allocated, std::int64_t reserved) {
    stats.allocated = allocated;
    stats.reserved = reserved;
    stats.peakAllocated = std::max(stats.peakAllocated, allocated);
    stats.peakReserved = std::max(stats.peakReserved, reserved);
  }
  DeviceMemoryReader reader() {
    return {"cuda:3", [this] { return stats; },
            [this] {
              stats.peakAllocated = stats.allocated;
              stats.peakReserved = stats.reserved;
              ++resets;
            }};
  }
};

class DevicePhasePeaksTest : public ::testing::Test {
 protected:
  void SetUp() override { setDeviceMemoryReader(device_.reader()); }
  void TearDown() override { setDeviceMemoryReader(std::nullopt); }
  DevicePhasePeak phase(const DeviceMemorySnapshot& s, Phase p) {
    return s.phases[static_cast<std::size_t>(p)];
  }
  FakeDevice device_;
};

TEST(DevicePhasePeaksNoReader, CpuHasNoDeviceFigures) {
  EXPECT_FALSE(deviceMemorySnapshot());
  const MemorySnapshot s = memorySnapshot();
  EXPECT_FALSE(s.device);
  const protocol::RankMemory m = s.toRankMemory(0);
  EXPECT_EQ(m.device, "");
  EXPECT_FALSE(m.device_bytes);
  EXPECT_FALSE(m.device_peak);
  EXPECT_FALSE(m.device_reserved);
  EXPECT_FALSE(m.device_reserved_peak);
  EXPECT_TRUE(m.device_phases.empty());
  { MemoryPhase scope(Phase::kActivations); }  // boundaries without a reader are harmless
  EXPECT_FALSE(deviceMemorySnapshot());
}

// Each phase gets the highest figures reached while it was current, not before it.
TEST_F(DevicePhasePeaksTest, EachPhaseGetsThePeakWithinIt) {
  {
    MemoryPhase params(Phase::kParameters);
    device_.set(100, 2 << 20);  // parameters: 100 B allocated, 2 MiB reserved
    {
      MemoryPhase acts(Phase::kActivations);
      device_.set(1100, 22 << 20);  // activations: +1000 B, a 20 MiB segment
      device_.set(100, 22 << 20);   // freed; the segment stays cached
    }
    device_.set(300, 22 << 20);  // parameters again: 300 B, below the activations' peak
  }
  const auto s = deviceMemorySnapshot();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->device, "cuda:3");
  EXPECT_EQ(s->allocated, 300);
  EXPECT_EQ(s->reserved, 22 << 20);
  EXPECT_EQ(s->peakAllocated, 1100);
  EXPECT_EQ(s->peakReserved, 22 << 20);
  // Parameters: max(100 before the activations, 300 after); reserved 22 MiB after the activations' segment.
  EXPECT_EQ(phase(*s, Phase::kParameters).allocated, 300);
  EXPECT_EQ(phase(*s, Phase::kParameters).reserved, 22 << 20);
  EXPECT_TRUE(phase(*s, Phase::kParameters).seen);
  EXPECT_EQ(phase(*s, Phase::kActivations).allocated, 1100);
  EXPECT_EQ(phase(*s, Phase::kActivations).reserved, 22 << 20);
  EXPECT_FALSE(phase(*s, Phase::kGradients).seen);
  EXPECT_FALSE(phase(*s, Phase::kOptimizer).seen);
}

// The device's phase is process-wide: a scope another thread opens inside the training thread's scope
// (autograd's device thread inside backward) gets its interval, and closing it gives the interval back to
// the enclosing scope's phase, not to that thread's own (kOther) tag.
TEST_F(DevicePhasePeaksTest, ScopesOnAnotherThreadNestInTheDevicePhase) {
  MemoryPhase backward(Phase::kGradients);
  device_.set(50, 2 << 20);
  std::thread([this] {
    MemoryPhase gathered(Phase::kGathered);
    device_.set(5000, 22 << 20);
    device_.set(50, 22 << 20);
  }).join();
  device_.set(700, 22 << 20);
  const auto s = deviceMemorySnapshot();
  ASSERT_TRUE(s);
  EXPECT_EQ(phase(*s, Phase::kGathered).allocated, 5000);
  EXPECT_EQ(phase(*s, Phase::kGradients).allocated, 700);
  EXPECT_EQ(phase(*s, Phase::kOther).allocated, 0);  // only the instant of setDeviceMemoryReader()
  EXPECT_EQ(s->peakAllocated, 5000);
}

// A new interval: peaks drop to the current values, phases not current are cleared.
TEST_F(DevicePhasePeaksTest, ResetStartsANewInterval) {
  MemoryPhase optimizer(Phase::kOptimizer);
  device_.set(900, 4 << 20);
  device_.set(400, 4 << 20);
  resetDevicePeaks();
  auto s = deviceMemorySnapshot();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->peakAllocated, 400);
  EXPECT_EQ(s->peakReserved, 4 << 20);
  EXPECT_EQ(phase(*s, Phase::kOptimizer).allocated, 400);
  EXPECT_TRUE(phase(*s, Phase::kOptimizer).seen);
  EXPECT_FALSE(phase(*s, Phase::kOther).seen);
  const int resets = device_.resets;
  { MemoryPhase acts(Phase::kActivations); }
  EXPECT_EQ(device_.resets, resets + 2);  // one per boundary: the tracker owns the allocator's peaks
}

// The memory event's rank entry carries the device's figures and the phases seen, by name.
TEST_F(DevicePhasePeaksTest, RankMemoryCarriesTheDeviceFields) {
  {
    MemoryPhase acts(Phase::kActivations);
    device_.set(1 << 20, 2 << 20);
  }
  device_.set(512, 2 << 20);
  const protocol::RankMemory m = memorySnapshot().toRankMemory(2);
  EXPECT_EQ(m.device, "cuda:3");
  EXPECT_EQ(m.device_bytes, std::int64_t{512});
  EXPECT_EQ(m.device_peak, std::int64_t{1 << 20});
  EXPECT_EQ(m.device_reserved, std::int64_t{2 << 20});
  EXPECT_EQ(m.device_reserved_peak, std::int64_t{2 << 20});
  ASSERT_EQ(m.device_phases.size(), 2u);  // other (before and after the scope) and activations
  EXPECT_EQ(m.device_phases.at("activations"), (protocol::DevicePhaseMemory{1 << 20, 2 << 20}));
  // The interval after the scope starts where the activations left the device: 1 MiB, then 512 B.
  EXPECT_EQ(m.device_phases.at("other"), (protocol::DevicePhaseMemory{1 << 20, 2 << 20}));
}

}  // namespace
}  // namespace fs::telemetry
