#include "backend/data/data_position.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

namespace fs::data {
namespace {

DataPosition sample() {
  DataPosition p;
  p.source = "shards";
  p.epoch = 3;
  p.rank = 1;
  p.world = 4;
  p.datasets = {"laion", "mmc4"};
  p.batchesConsumed = {17, 16};
  p.rngState.data = {0x00, 0x7f, 0xff, 0x10};
  return p;
}

TEST(DataPosition, RoundTripsThroughJson) {
  const DataPosition p = sample();
  const auto back = decodeDataPosition(encodeDataPosition(p));
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value(), p);
}

TEST(DataPosition, EmptyRngStateRoundTrips) {
  DataPosition p = sample();
  p.rngState.data.clear();
  const auto back = decodeDataPosition(encodeDataPosition(p));
  ASSERT_TRUE(back.isOk());
  EXPECT_TRUE(back->rngState.data.empty());
}

TEST(DataPosition, RejectsGarbageMissingFieldsAndNewerFormat) {
  EXPECT_FALSE(decodeDataPosition("not json").isOk());
  EXPECT_FALSE(decodeDataPosition("[1,2]").isOk());
  EXPECT_FALSE(decodeDataPosition(R"({"format":1,"source":"synthetic"})").isOk());
  std::string text = encodeDataPosition(sample());
  auto newer = nlohmann::json::parse(text);
  newer["format"] = 99;
  const auto r = decodeDataPosition(newer.dump());
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), protocol::Status::Code::kUnsupported);
  std::string badHex = text;
  badHex.replace(badHex.find("007fff10"), 8, "007fffzz");
  EXPECT_FALSE(decodeDataPosition(badHex).isOk());
}

DataPosition withCursors() {
  DataPosition p = sample();
  p.batchSizes = {4, 2};
  p.cursors = {{"/data/laion-000012.tar", 12, 40, 340, 0, 1},
               {"pipe:cat /data/mmc4-000003.tar", 3, 8, 7, 2, 0}};
  return p;
}

TEST(DataPosition, CursorsRoundTripAndAreWrittenOnlyWhenPresent) {
  const DataPosition p = withCursors();
  const std::string text = encodeDataPosition(p);
  const auto j = nlohmann::json::parse(text);
  ASSERT_TRUE(j.contains("cursors"));
  EXPECT_EQ(j.at("cursors")[0].at("shard"), "/data/laion-000012.tar");
  EXPECT_EQ(j.at("cursors")[0].at("samples_read"), 340);
  EXPECT_EQ(j.at("cursors")[1].at("pass"), 2);
  const auto back = decodeDataPosition(text);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value(), p);

  DataPosition none = p;
  none.cursors.clear();
  const std::string plain = encodeDataPosition(none);
  EXPECT_FALSE(nlohmann::json::parse(plain).contains("cursors"));
  const auto again = decodeDataPosition(plain);
  ASSERT_TRUE(again.isOk());
  EXPECT_TRUE(again->cursors.empty());
  EXPECT_EQ(again.value(), none);
}

// Older readers skip keys they do not know; so does this one (the format stays 1).
TEST(DataPosition, UnknownKeysAreIgnored) {
  auto j = nlohmann::json::parse(encodeDataPosition(withCursors()));
  j["written_by_a_newer_build"] = {{"anything", 1}};
  j["cursors"][0]["also_new"] = "x";
  const auto back = decodeDataPosition(j.dump());
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value(), withCursors());
  EXPECT_EQ(j.at("format"), 1);
}

TEST(DataPosition, MalformedCursorsAreRejectedNamingTheField) {
  const auto base = nlohmann::json::parse(encodeDataPosition(withCursors()));
  const auto expectError = [&](const std::function<void(nlohmann::json&)>& spoil, const std::string& says) {
    nlohmann::json j = base;
    spoil(j);
    const auto r = decodeDataPosition(j.dump());
    ASSERT_FALSE(r.isOk()) << j.dump();
    EXPECT_EQ(r.status().code(), protocol::Status::Code::kCorruption);
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
  };
  expectError([](auto& j) { j["cursors"] = "laion"; }, "field 'cursors' is \"laion\", expected an array");
  expectError([](auto& j) { j["cursors"].erase(1); }, "1 cursors for 2 datasets");
  expectError([](auto& j) { j["cursors"][1] = 5; }, "field 'cursors[1]' is 5, expected an object");
  expectError([](auto& j) { j["cursors"][0].erase("shard"); }, "missing required field 'cursors[0].shard'");
  expectError([](auto& j) { j["cursors"][0]["shard"] = ""; }, "cursors[0].shard is empty");
  expectError([](auto& j) { j["cursors"][1]["samples_read"] = -3; },
              "cursors[1].samples_read is -3, below 0");
  expectError([](auto& j) { j["cursors"][1]["pass"] = "two"; },
              "field 'cursors[1].pass' is \"two\", expected an integer");
  expectError([](auto& j) { j["cursors"][0]["worker"] = 1.5; },
              "field 'cursors[0].worker' is 1.5, expected an integer");
  expectError([](auto& j) { j["cursors"][0].erase("shard_count"); },
              "missing required field 'cursors[0].shard_count'");
  expectError([](auto& j) { j["cursors"][0]["shard_index"] = 40; },
              "cursors[0].shard_index 40 is not below shard_count 40");
}

// Cursors describe, they do not decide: a position resumes whatever they say.
TEST(DataPosition, CheckResumableIgnoresCursors) {
  DataPosition mine = withCursors();
  mine.cursors.clear();
  EXPECT_TRUE(checkResumable(mine, withCursors(), 100));
}

}  // namespace
}  // namespace fs::data
