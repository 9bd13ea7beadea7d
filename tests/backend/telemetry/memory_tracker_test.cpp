// What the tracker guarantees is NOTE [What the memory counters guarantee] in
// memory_tracker.h; each test checks one clause of it, exactly (no tolerances).
#include "backend/telemetry/memory_tracker.h"

#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>
#include <vector>

namespace fs::telemetry {
namespace {

torch::Tensor g_before_install;  // allocated before the tracker existed

class TrackerEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    torch::set_num_threads(1);
    g_before_install = torch::ones({1000});
    ASSERT_TRUE(installCpuMemoryTracker().isOk());
  }
  void TearDown() override { g_before_install = torch::Tensor(); }
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new TrackerEnvironment);

std::int64_t live(Phase p) {
  return memorySnapshot()[p].live;
}

TEST(MemoryTrackerTest, InstallIsIdempotentAndActive) {
  EXPECT_TRUE(installCpuMemoryTracker().isOk());
  EXPECT_TRUE(cpuMemoryTrackerInstalled());
  EXPECT_TRUE(memorySnapshot().tracking);
}

TEST(MemoryTrackerTest, LiveBytesPerPhaseAreExactlyTheStorageSizes) {
  const auto before = memorySnapshot();
  torch::Tensor a, b, c;
  {
    MemoryPhase scope(Phase::kParameters);
    a = torch::empty({1000}, torch::kFloat);
    b = torch::zeros({7, 3}, torch::kDouble);
  }
  {
    MemoryPhase scope(Phase::kActivations);
    c = torch::empty({3, 5}, torch::kBFloat16);
  }
  const auto after = memorySnapshot();
  EXPECT_EQ(after[Phase::kParameters].live - before[Phase::kParameters].live, 4000 + 7 * 3 * 8);
  EXPECT_EQ(after[Phase::kActivations].live - before[Phase::kActivations].live, 3 * 5 * 2);
  EXPECT_EQ(after[Phase::kGradients].live, before[Phase::kGradients].live);
  EXPECT_EQ(after.total.live - before.total.live, 4000 + 168 + 30);
  EXPECT_EQ(after.allocations - before.allocations, 3);
  EXPECT_EQ(static_cast<std::int64_t>(a.storage().nbytes() + b.storage().nbytes()), 4000 + 168);
  a = b = c = torch::Tensor();
  EXPECT_EQ(live(Phase::kParameters), before[Phase::kParameters].live);
  EXPECT_EQ(live(Phase::kActivations), before[Phase::kActivations].live);
  EXPECT_EQ(memorySnapshot().allocations, before.allocations);
  // Frees lower the live count only: three allocations were made.
  EXPECT_EQ(memorySnapshot().allocationsMade - before.allocationsMade, 3);
}

TEST(MemoryTrackerTest, FreeDecrementsThePhaseOfTheAllocation) {
  const std::int64_t params = live(Phase::kParameters), acts = live(Phase::kActivations);
  torch::Tensor t;
  {
    MemoryPhase scope(Phase::kParameters);
    t = torch::empty({256}, torch::kFloat);
  }
  {
    MemoryPhase scope(Phase::kActivations);
    t = torch::Tensor();  // freed while another phase is current
  }
  EXPECT_EQ(live(Phase::kParameters), params);
  EXPECT_EQ(live(Phase::kActivations), acts);
}

TEST(MemoryTrackerTest, ViewsAndEmptyTensorsCountNothing) {
  MemoryPhase scope(Phase::kGathered);
  torch::Tensor base = torch::empty({64, 64});
  const std::int64_t with_base = live(Phase::kGathered);
  torch::Tensor view = base.view({4096}).slice(0, 10, 20);
  torch::Tensor t = base.t();
  torch::Tensor empty = torch::empty({0, 5});
  EXPECT_EQ(live(Phase::kGathered), with_base);
}

TEST(MemoryTrackerTest, PhasesNestAndArePerThread) {
  EXPECT_EQ(currentMemoryPhase(), Phase::kOther);
  {
    MemoryPhase outer(Phase::kOptimizer);
    {
      MemoryPhase inner(Phase::kGradients);
      EXPECT_EQ(currentMemoryPhase(), Phase::kGradients);
      std::thread([] { EXPECT_EQ(currentMemoryPhase(), Phase::kOther); }).join();
    }
    EXPECT_EQ(currentMemoryPhase(), Phase::kOptimizer);
  }
  EXPECT_EQ(currentMemoryPhase(), Phase::kOther);
}

TEST(MemoryTrackerTest, PeakIsTheHighestLiveSinceReset) {
  MemoryPhase scope(Phase::kActivations);
  const std::int64_t base = live(Phase::kActivations);
  resetMemoryPeaks();
  EXPECT_EQ(memorySnapshot()[Phase::kActivations].peak, base);
  {
    torch::Tensor big = torch::empty({1 << 18}, torch::kFloat);   // 1 MiB
    torch::Tensor more = torch::empty({1 << 16}, torch::kFloat);  // 256 KiB
  }
  torch::Tensor small = torch::empty({1 << 10}, torch::kFloat);
  auto s = memorySnapshot();
  EXPECT_EQ(s[Phase::kActivations].peak - base, (1 << 20) + (1 << 18));
  EXPECT_EQ(s[Phase::kActivations].live - base, 1 << 12);
  resetMemoryPeaks();
  EXPECT_EQ(memorySnapshot()[Phase::kActivations].peak - base, 1 << 12);
}

// The step interval (the memory event's step_peak) is its own: resetMemoryPeaks() leaves it alone.
TEST(MemoryTrackerTest, StepPeakHasItsOwnInterval) {
  MemoryPhase scope(Phase::kActivations);
  resetStepPeak();
  const std::int64_t base = memorySnapshot().total.live;
  EXPECT_EQ(memorySnapshot().stepPeak, base);
  { torch::Tensor big = torch::empty({1 << 18}, torch::kFloat); }  // 1 MiB
  resetMemoryPeaks();
  { torch::Tensor small = torch::empty({1 << 10}, torch::kFloat); }
  auto s = memorySnapshot();
  EXPECT_EQ(s.stepPeak - base, 1 << 20);
  EXPECT_EQ(s.total.peak - base, 1 << 12);
  resetStepPeak();
  EXPECT_EQ(memorySnapshot().stepPeak, base);
}

TEST(MemoryTrackerTest, StoragesFromBeforeInstallAreNeverCounted) {
  const auto before = memorySnapshot();
  g_before_install = torch::Tensor();
  const auto after = memorySnapshot();
  EXPECT_EQ(after.total.live, before.total.live);
  EXPECT_EQ(after.allocations, before.allocations);
}

TEST(MemoryTrackerTest, OperatorOutputsAndTrainingStep) {
  torch::manual_seed(0);
  torch::nn::Linear layer(nullptr);
  const auto start = memorySnapshot();
  {
    MemoryPhase scope(Phase::kParameters);
    layer = torch::nn::Linear(32, 16);
  }
  const std::int64_t param_bytes = (32 * 16 + 16) * 4;
  EXPECT_EQ(live(Phase::kParameters) - start[Phase::kParameters].live, param_bytes);

  torch::Tensor x = torch::randn({8, 32});  // kOther
  torch::Tensor y, loss;
  {
    MemoryPhase scope(Phase::kActivations);
    y = layer(x);
    loss = torch::sigmoid(y).sum();  // backward keeps sigmoid's output; sum() gives a 0-d tensor
  }
  EXPECT_EQ(live(Phase::kActivations) - start[Phase::kActivations].live,
            static_cast<std::int64_t>(y.nbytes()) + 8 * 16 * 4 + 4);
  {
    MemoryPhase scope(Phase::kGradients);
    loss.backward();
  }
  // Backward freed the saved sigmoid output; the temporaries it made are gone; what
  // stays under gradients are the two .grad tensors.
  EXPECT_EQ(live(Phase::kActivations) - start[Phase::kActivations].live,
            static_cast<std::int64_t>(y.nbytes() + loss.nbytes()));
  EXPECT_EQ(live(Phase::kGradients) - start[Phase::kGradients].live, param_bytes);
  y = loss = torch::Tensor();
  layer = torch::nn::Linear(nullptr);
  const auto end = memorySnapshot();
  for (Phase p : {Phase::kParameters, Phase::kGradients, Phase::kActivations})
    EXPECT_EQ(end[p].live, start[p].live) << phaseName(p);
}

TEST(MemoryTrackerTest, RawAllocateRoundTrips) {
  c10::Allocator* alloc = c10::GetCPUAllocator();
  const std::int64_t before = live(Phase::kOther);
  void* p = alloc->raw_allocate(1234);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % c10::gAlignment, 0u);
  EXPECT_EQ(live(Phase::kOther) - before, 1234);
  alloc->raw_deallocate(p);
  EXPECT_EQ(live(Phase::kOther), before);
}

TEST(MemoryTrackerTest, ConcurrentAllocationAndFreeFromManyThreads) {
  const auto before = memorySnapshot();
  constexpr int kThreads = 4, kRounds = 2000;
  const Phase phases[kThreads] = {Phase::kParameters, Phase::kGradients, Phase::kOptimizer, Phase::kGathered};
  std::vector<std::vector<torch::Tensor>> kept(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      MemoryPhase scope(phases[t]);
      for (int i = 0; i < kRounds; ++i) {
        torch::Tensor temp = torch::empty({i % 97 + 1}, torch::kFloat);
        if (i % 10 == 0) kept[t].push_back(temp);
      }
    });
  }
  for (auto& t : threads) t.join();
  const auto mid = memorySnapshot();
  for (int t = 0; t < kThreads; ++t) {
    std::int64_t expected = 0;
    for (const auto& k : kept[t]) expected += static_cast<std::int64_t>(k.nbytes());
    EXPECT_EQ(mid[phases[t]].live - before[phases[t]].live, expected) << phaseName(phases[t]);
  }
  kept.clear();  // freed from this thread, which is tagged kOther
  const auto after = memorySnapshot();
  for (Phase p : phases) EXPECT_EQ(after[p].live, before[p].live) << phaseName(p);
  EXPECT_EQ(after.allocations, before.allocations);
}

TEST(MemoryTrackerTest, ProcessMemoryAndRankEntry) {
  ProcessMemory pm = readProcessMemory();
  EXPECT_GT(pm.rss_bytes, 0);
  EXPECT_GE(pm.peak_rss_bytes, pm.rss_bytes);
  MemorySnapshot s;
  s.process = {100, 200};
  s.phases[static_cast<int>(Phase::kParameters)] = {10, 11};
  s.phases[static_cast<int>(Phase::kGradients)] = {0, 12};
  s.phases[static_cast<int>(Phase::kOptimizer)] = {13, 13};
  s.phases[static_cast<int>(Phase::kGathered)] = {0, 14};
  s.phases[static_cast<int>(Phase::kActivations)] = {0, 15};
  protocol::RankMemory m = s.toRankMemory(3);
  EXPECT_EQ(m, (protocol::RankMemory{3, 100, 200, 11, 12, 13, 14, 15, std::nullopt, std::nullopt}));
}

}  // namespace
}  // namespace fs::telemetry
