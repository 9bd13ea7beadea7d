#include "backend/data/data_position.h"

#include <gtest/gtest.h>

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
  p.rngState = {0x00, 0x7f, 0xff, 0x10};
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
  p.rngState.clear();
  const auto back = decodeDataPosition(encodeDataPosition(p));
  ASSERT_TRUE(back.isOk());
  EXPECT_TRUE(back->rngState.empty());
}

TEST(DataPosition, RejectsGarbageMissingFieldsAndNewerFormat) {
  EXPECT_FALSE(decodeDataPosition("not json").isOk());
  EXPECT_FALSE(decodeDataPosition("[1,2]").isOk());
  EXPECT_FALSE(decodeDataPosition(R"({"format":1,"source":"synthetic"})").isOk());
  std::string text = encodeDataPosition(sample());
  const std::string newer = std::string(R"({"format":99)") + text.substr(text.find(','));
  const auto r = decodeDataPosition(newer);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), protocol::Status::Code::kUnsupported);
  std::string badHex = text;
  badHex.replace(badHex.find("007fff10"), 8, "007fffzz");
  EXPECT_FALSE(decodeDataPosition(badHex).isOk());
}

}  // namespace
}  // namespace fs::data
