// The plan's presentations: the `layout` telemetry event from a layout and
// shard plan (what the runtime will emit), the JSON, and byte formatting.
#include "backend/fsdp_plan/plan_report.h"

#include <gtest/gtest.h>

#include "backend/protocol/wire/event_codec.h"
#include "plan_test_util.h"

namespace fs::fsdp_plan {
namespace {

Plan tinyPlan(Topology t) {
  PlanRequest req;
  req.config = test::preset("tiny");
  req.topology = t;
  req.policies = {"openflamingo"};
  req.strategies = {Strategy::kFullShard};
  auto plan = makePlan(req);
  EXPECT_TRUE(plan.isOk()) << plan.status().message();
  return *plan;
}

TEST(PlanReport, LayoutEventCarriesShardBytesPerRankAndPadding) {
  const auto plan = tinyPlan({3, 1});
  const auto& e = plan.entries.front();
  const auto event = toLayoutEvent(plan.layouts[e.layout], e.shards, 2);
  ASSERT_EQ(event.units.size(), 8u);
  EXPECT_EQ(event.max_units_gathered, 2);
  const auto& vision = event.units[1];
  EXPECT_EQ(vision.path, "vision_encoder");
  EXPECT_EQ(vision.param_count, 33280);
  EXPECT_EQ(vision.frozen_params, 33280);
  EXPECT_FALSE(vision.trainable);
  EXPECT_EQ(vision.dtype, "float32");
  EXPECT_EQ(vision.shard_bytes, (std::vector<int64_t>{11094 * 4, 11094 * 4, 11094 * 4}));
  EXPECT_EQ(vision.padding_elems, 2);
  EXPECT_EQ(vision.gather_order, 1);
  // It encodes as a telemetry line.
  protocol::Event ev;
  ev.body = event;
  EXPECT_NE(protocol::encodeEventLine(ev).find("\"type\":\"layout\""), std::string::npos);
}

TEST(PlanReport, JsonNamesEveryUnitAndEstimate) {
  const auto plan = tinyPlan({2, 1});
  const auto j = planToJson(plan);
  EXPECT_EQ(j["schema"], kPlanJsonSchema);
  EXPECT_EQ(j["model"]["params"], 83972);
  EXPECT_EQ(j["model"]["trainable_params"], 29380);
  ASSERT_EQ(j["layouts"].size(), 2u);  // openflamingo + the reference
  EXPECT_EQ(j["layouts"][1]["policy"], "reference_fsdp1");
  ASSERT_EQ(j["estimates"].size(), 2u);
  EXPECT_EQ(j["estimates"][0]["per_rank"]["parameters"], 83972 / 2 * 4);
  EXPECT_EQ(j["layouts"][0]["units"][3]["merged_from"][0], "lang_encoder.lm_head");
}

TEST(PlanReport, JsonGivesEachParameterAndEachUnitsGatheredSizeAndPeak) {
  const auto plan = tinyPlan({2, 1});
  const auto j = planToJson(plan);
  int64_t numel = 0;
  for (const auto& layout : j["layouts"]) {
    int64_t layoutNumel = 0;
    for (const auto& u : layout["units"]) {
      ASSERT_EQ(u["param_details"].size(), u["params"].size());
      int64_t unitNumel = 0, frozen = 0;
      for (const auto& p : u["param_details"]) {
        unitNumel += p["numel"].get<int64_t>();
        frozen += p["trainable"].get<bool>() ? 0 : p["numel"].get<int64_t>();
        EXPECT_EQ(p["bytes"].get<int64_t>(), p["numel"].get<int64_t>() * 4);  // tiny: float32 throughout
      }
      EXPECT_EQ(unitNumel, u["param_count"].get<int64_t>());
      EXPECT_EQ(frozen, u["frozen_params"].get<int64_t>());
      layoutNumel += unitNumel;
    }
    numel = layoutNumel;
    EXPECT_EQ(numel, 83972);
  }
  for (size_t e = 0; e < plan.entries.size(); ++e) {
    const auto& est = j["estimates"][e];
    const auto& memory = plan.entries[e].memory;
    int64_t largest = 0;
    for (const auto& u : est["units"]) {
      // float32 throughout: unsharded = a rank's shard x the shard group.
      EXPECT_EQ(u["gathered_bytes"].get<int64_t>(),
                u["shard_bytes"][0].get<int64_t>() * est["shard_group_size"].get<int64_t>());
      const auto phase = u["peak_phase"].get<std::string>();
      EXPECT_TRUE(phase == "forward" || phase == "backward" || phase.rfind("head", 0) == 0) << phase;
      largest = std::max(largest, u["peak_bytes"].get<int64_t>());
    }
    // The root is gathered throughout: it peaks at the step's peak, which no unit exceeds.
    EXPECT_EQ(est["units"][0]["peak_bytes"], memory.stepPeak);
    EXPECT_EQ(largest, memory.stepPeak);
    EXPECT_EQ(est["peak_phase"], walkPhaseName(memory.stepPeakPhase));
  }
}

TEST(PlanReport, FormatsBytes) {
  EXPECT_EQ(formatBytes(96), "96 B");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(int64_t{3} << 20), "3.0 MiB");
  EXPECT_EQ(formatBytes(4456234624), "4.15 GiB");
}

}  // namespace
}  // namespace fs::fsdp_plan
