// The plan JSON's record and codec (plan_record.h): a full record round-trips
// through the text the CLI prints; a trimmed plan (what a reader requires) reads;
// bad input is refused naming the field by its JSON path.
#include "backend/protocol/wire/plan_record.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

namespace fs::protocol {
namespace {

PlanRecord sample() {
  PlanRecord p;
  p.world = 2;
  p.nodes = 1;
  p.model = {"opt", 84, 29, 7, {}, {{"lang_encoder.embed.weight", {"lang_encoder.lm_head.weight"}}}};
  p.precision = {"float32", "bfloat16", "bfloat16", "float32", "bfloat16"};
  p.referencePrecision = {"float32", "float32", "float32", "float32", "float32"};
  p.activations = {90, 30, {{"laion", 4, 32, 1, 90, 30}}};
  PlanLayoutUnit root;
  root.moduleType = "Flamingo";
  root.paramCount = 40;
  root.params = {"a", "b"};
  root.paramDetails = {{20, 80, true}, {20, 40, false}};
  PlanLayoutUnit perceiver;
  perceiver.path = "perceiver";
  perceiver.moduleType = "PerceiverResampler";
  perceiver.paramCount = 44;
  perceiver.frozenParams = 4;
  perceiver.trainable = true;
  perceiver.dtype = "float32";
  perceiver.gatherOrder = 1;
  perceiver.inBackward = false;
  perceiver.mergedFrom = {"x"};
  p.layouts = {{"openflamingo", {root, perceiver}}};
  PlanEstimateRecord e;
  e.engine = "ours";
  e.policy = "openflamingo";
  e.strategy = "full_shard";
  e.shardGroupSize = 2;
  e.units = {{{100, 100}, 0, {{true, true, 50, 0, 25, "float32", 100}}}, {{200, 180}, 5, {}}};
  e.perRank = {300, 20, 40, 360, 50, 90, 90, 30, 10, 60, 140, 570};
  e.units[1].gatheredBytes = 400;
  e.units[1].peakBytes = 140;
  e.units[1].peakPhase = "backward";
  e.peakUnit = 1;
  e.peakPhase = "backward";
  p.estimates = {e};
  p.notes = {"a note"};
  return p;
}

std::string withEdit(const std::function<void(nlohmann::json&)>& edit) {
  auto j = planToJson(sample());
  edit(j);
  return j.dump();
}

std::string errorOf(const std::string& text) {
  auto r = decodePlanJson(text);
  EXPECT_FALSE(r.isOk());
  return r.isOk() ? "" : r.status().message();
}

TEST(PlanRecord, RoundTripsThroughTheCliText) {
  const std::string text = encodePlanJson(sample());
  EXPECT_EQ(text.back(), '\n');
  auto back = decodePlanJson(text);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(*back, sample());
  EXPECT_EQ(encodePlanJson(*back), text);
}

TEST(PlanRecord, WritesEveryFieldEvenWhenDefault) {
  const auto j = planToJson(sample());
  EXPECT_EQ(j["schema"], kPlanJsonSchema);
  EXPECT_TRUE(j["model"]["buffers"].is_array());
  EXPECT_EQ(j["layouts"][0]["units"][0]["path"], "");
  EXPECT_EQ(j["layouts"][0]["units"][0]["frozen_params"], 0);
  EXPECT_EQ(j["estimates"][0]["units"][1]["groups"], nlohmann::json::array());
  EXPECT_EQ(j["estimates"][0]["per_rank"]["loader"], 60);
  EXPECT_EQ(j["estimates"][0]["per_rank"]["step_peak"], 140);
}

TEST(PlanRecord, ReadsAPlanTrimmedToWhatAReaderRequires) {
  const auto r = decodePlanJson(withEdit([](nlohmann::json& j) {
    j.erase("precision");
    j.erase("activations");
    j.erase("notes");
    j["layouts"][0]["units"] = {{{"path", ""}}, {{"path", "perceiver"}}};
    j["estimates"][0]["per_rank"].erase("step_peak");
    j["estimates"][0]["per_rank"].erase("loader");  // plans before 2026-11-28
    j["model"]["unknown"] = true;
  }));
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->layouts[0].units[1].path, "perceiver");
  EXPECT_EQ(r->estimates[0].perRank.peak, 570);
  EXPECT_EQ(r->estimates[0].perRank.loader, 0);
  EXPECT_TRUE(r->notes.empty());
}

TEST(PlanRecord, AMissingFieldIsNamedByItsPath) {
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j["estimates"][0]["per_rank"].erase("gradients"); })),
            "estimates[0].per_rank.gradients: missing");
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j.erase("world"); })), "world: missing");
}

TEST(PlanRecord, AWrongTypeIsNamedByItsPath) {
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j["world"] = "two"; })), "world: not an integer");
  EXPECT_EQ(
      errorOf(withEdit([](nlohmann::json& j) { j["estimates"][0]["units"][1]["shard_bytes"][0] = true; })),
      "estimates[0].units[1].shard_bytes[0]: not an integer");
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j["model"] = 3; })), "model: not an object");
}

TEST(PlanRecord, AnotherMajorSchemaIsRefused) {
  auto r = decodePlanJson(withEdit([](nlohmann::json& j) { j["schema"] = "fs.plan/2"; }));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Status::Code::kUnsupported);
  EXPECT_EQ(r.status().message(), "schema: 'fs.plan/2' is not fs.plan/1.x");
  EXPECT_TRUE(decodePlanJson(withEdit([](nlohmann::json& j) { j["schema"] = "fs.plan/1.3"; })).isOk());
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j["schema"] = "fs.plan/10"; })),
            "schema: 'fs.plan/10' is not fs.plan/1.x");
}

TEST(PlanRecord, IndicesAndRankCountsMustAgree) {
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j["estimates"][0]["layout"] = 1; })),
            "estimates[0].layout: 1 is not an index into layouts");
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j["world"] = 3; })),
            "estimates[0].units[0].shard_bytes: 2 entries for a world of 3");
}

TEST(PlanRecord, NotJsonIsCorruption) {
  auto r = decodePlanJson("flamingo-train: oops");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Status::Code::kCorruption);
  EXPECT_EQ(r.status().message().rfind("not JSON: ", 0), 0u) << r.status().message();
  EXPECT_EQ(decodePlanJson("[1]").status().message(), "not a JSON object");
}

TEST(PlanRecord, DeepNestingIsRefusedBeforeParsing) {  // NOTE [JSON nesting]
  auto r = decodePlanJson("{\"x\":" + std::string(100000, '{') + std::string(100000, '}') + "}");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(), "not JSON: JSON nested deeper than 64 levels");
}

}  // namespace
}  // namespace fs::protocol
