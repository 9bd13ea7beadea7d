// The planner's GPU mode (NOTE [Device estimate]): the peak's requests add up to the planned peak, CPU mode
// plans no device bytes, and the report shows allocated and reserved beside the peak.
#include "backend/fsdp_plan/device_estimate.h"

#include <gtest/gtest.h>

#include <numeric>

#include "backend/fsdp_plan/plan.h"
#include "backend/fsdp_plan/plan_report.h"
#include "plan_test_util.h"

namespace fs::fsdp_plan {
namespace {

Plan tinyPlan(PlanDevice device, std::vector<Strategy> strategies, Topology t) {
  PlanRequest req;
  req.config = test::preset("tiny");
  req.topology = t;
  req.policies = {"openflamingo"};
  req.strategies = std::move(strategies);
  req.reference = false;
  req.device = device;
  auto plan = makePlan(req);
  EXPECT_TRUE(plan.isOk()) << plan.status().message();
  return *plan;
}

TEST(DeviceEstimate, CpuModePlansNoDeviceBytes) {
  const auto plan = tinyPlan(PlanDevice::kCpu, {Strategy::kFullShard}, {3, 1});
  for (const auto& e : plan.entries) EXPECT_FALSE(e.device);
  EXPECT_EQ(formatPlan(plan, 0, 0).find("allocated"), std::string::npos);
}

TEST(DeviceEstimate, RequestsAddUpToThePlannedPeak) {
  for (const auto& [strategies, topology] : std::vector<std::pair<std::vector<Strategy>, Topology>>{
           {{Strategy::kFullShard, Strategy::kShardGradOp, Strategy::kNoShard}, {3, 1}},
           {{Strategy::kSingle}, {1, 1}},
           {{Strategy::kDdp}, {2, 1}}}) {
    const auto plan = tinyPlan(PlanDevice::kCuda, strategies, topology);
    ASSERT_EQ(plan.entries.size(), strategies.size());
    for (const auto& e : plan.entries) {
      const auto requests = peakRequests(
          plan.inventory, e.shards,
          isReplicated(e.strategy) ? replicatedPrecisionOf(plan.precision) : plan.precision, e.memory);
      EXPECT_EQ(std::accumulate(requests.begin(), requests.end(), int64_t{0}), e.memory.peak())
          << strategyName(e.strategy);
      ASSERT_TRUE(e.device);
      EXPECT_EQ(e.device->requested, e.memory.peak());
      EXPECT_GE(e.device->allocated, e.device->requested);
      EXPECT_GE(e.device->reserved, e.device->allocated);
      EXPECT_EQ(*e.device, cudaLiveSet(requests));
    }
  }
}

// One request by hand: the tiny preset's frozen vision unit at world 3 holds 11094 float32 per rank
// (plan_report_test), 44376 B, a 44544 B block (87 x 512) in the small pool.
TEST(DeviceEstimate, ShardsAreRoundedOneByOne) {
  const auto plan = tinyPlan(PlanDevice::kCuda, {Strategy::kFullShard}, {3, 1});
  const auto& e = plan.entries.front();
  const auto requests = peakRequests(plan.inventory, e.shards, plan.precision, e.memory);
  ASSERT_FALSE(requests.empty());
  EXPECT_NE(std::find(requests.begin(), requests.end(), 11094 * 4), requests.end());
  EXPECT_EQ(cudaRoundedBytes(11094 * 4), 44544);
}

TEST(DeviceEstimate, ReportShowsAllocatedAndReserved) {
  const auto plan = tinyPlan(PlanDevice::kCuda, {Strategy::kFullShard}, {3, 1});
  const std::string text = formatPlan(plan, 0, 0);
  const auto& d = *plan.entries.front().device;
  const size_t at = text.find("per-rank device memory at the peak");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string section = text.substr(at);
  EXPECT_NE(section.find("allocated"), std::string::npos);
  EXPECT_NE(section.find("reserved"), std::string::npos);
  EXPECT_NE(section.find(formatBytes(d.allocated)), std::string::npos) << section;
  EXPECT_NE(section.find(formatBytes(d.reserved)), std::string::npos) << section;
}

TEST(DeviceEstimate, DeviceNamesAreChecked) {
  EXPECT_EQ(*planDeviceFromName("cuda", "--device"), PlanDevice::kCuda);
  EXPECT_EQ(*planDeviceFromName("cpu", "--device"), PlanDevice::kCpu);
  const auto bad = planDeviceFromName("gpu", "--device");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("--device: unknown device 'gpu'"), std::string::npos);
}

}  // namespace
}  // namespace fs::fsdp_plan
