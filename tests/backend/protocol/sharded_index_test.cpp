// index.json's record and codec (sharded_index.h): a full record round-trips,
// byte for byte; bad input is refused naming the field by its JSON path, and an
// unknown version by number.
#include "backend/protocol/wire/sharded_index.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "tests/backend/protocol/wire_samples.h"

namespace fs::protocol {
namespace {

using test::sampleShardedIndex;
const auto sample = sampleShardedIndex;

std::string withEdit(const std::function<void(nlohmann::json&)>& edit) {
  auto j = nlohmann::json::parse(encodeShardedIndex(sample()));
  edit(j);
  return j.dump();
}

std::string errorOf(const std::string& text) {
  auto r = decodeShardedIndex(text);
  EXPECT_FALSE(r.isOk());
  return r.isOk() ? "" : r.status().message();
}

TEST(ShardedIndex, RoundTripsByteForByte) {
  const std::string text = encodeShardedIndex(sample());
  auto back = decodeShardedIndex(text);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(*back, sample());
  EXPECT_EQ(encodeShardedIndex(*back), text);
  EXPECT_EQ(text.back(), '\n');
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["format"], kShardedFormatName);
  EXPECT_EQ(j["version"], kShardedIndexVersion);
  EXPECT_EQ(j["lr_scheduler"]["_step_count"], 4);
  EXPECT_FALSE(j["optimizer"]["param_groups"][1].contains("initial_lr"));
  EXPECT_EQ(j["optimizer"]["param_groups"][0]["initial_lr"], 1e-4);
}

// fp16 runs save their loss scale; every other run writes no grad_scaler at all.
TEST(ShardedIndex, TheLossScaleIsOptionalAndRoundTrips) {
  EXPECT_FALSE(nlohmann::json::parse(encodeShardedIndex(sample()))["resume"].contains("grad_scaler"));
  auto scaled = sample();
  scaled.resume.gradScaler = GradScalerRecord{1024.0, 2.0, 0.5, 2000, 17};
  const std::string text = encodeShardedIndex(scaled);
  EXPECT_EQ(nlohmann::json::parse(text)["resume"]["grad_scaler"]["_growth_tracker"], 17);
  auto back = decodeShardedIndex(text);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(*back, scaled);
  auto j = nlohmann::json::parse(text);
  j["resume"]["grad_scaler"].erase("scale");
  EXPECT_EQ(errorOf(j.dump()), "resume.grad_scaler.scale: missing");
}

TEST(ShardedIndex, AMissingFieldIsNamedByItsPath) {
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j.erase("parameter_order"); })),
            "parameter_order: missing");
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j["units"][0]["flats"][0].erase("members"); })),
            "units[0].flats[0].members: missing");
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j["resume"].erase("rng_own"); })),
            "resume.rng_own: missing");
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j.erase("format"); })), "format: missing");
}

TEST(ShardedIndex, AWrongTypeIsNamedByItsPath) {
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j["epoch"] = "one"; })), "epoch: not an integer");
  EXPECT_EQ(
      errorOf(withEdit([](nlohmann::json& j) { j["units"][0]["flats"][0]["members"][1]["shape"] = {1.5}; })),
      "units[0].flats[0].members[1].shape[0]: not an integer");
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j["units"][0]["flats"][0]["trainable"] = 1; })),
            "units[0].flats[0].trainable: not true or false");
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j["optimizer"]["param_groups"][0]["betas"] = {0.9}; })),
            "optimizer.param_groups[0].betas: 1 numbers, not 2");
}

TEST(ShardedIndex, AnUnknownVersionIsRefusedByNumber) {
  std::int64_t version = -1;
  auto r = decodeShardedIndex(withEdit([](nlohmann::json& j) { j["version"] = 2; }), &version);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Status::Code::kUnsupported);
  EXPECT_EQ(r.status().message(),
            "version: 2 is not a version this build reads (1); a newer Flamingo Studio wrote it");
  EXPECT_EQ(version, 2);
  EXPECT_EQ(errorOf(withEdit([](nlohmann::json& j) { j["format"] = "other"; })),
            "format: 'other' is not flamingo_studio.sharded_checkpoint");
}

TEST(ShardedIndex, NotJsonIsCorruption) {
  auto r = decodeShardedIndex("{\"format\": ");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Status::Code::kCorruption);
  EXPECT_EQ(r.status().message().rfind("not JSON: ", 0), 0u) << r.status().message();
  EXPECT_EQ(errorOf("[]"), "not a JSON object");
}

TEST(ShardedIndex, DeepNestingIsRefusedBeforeParsing) {  // NOTE [JSON nesting]
  auto r = decodeShardedIndex("{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(), "not JSON: JSON nested deeper than 64 levels");
}

}  // namespace
}  // namespace fs::protocol
