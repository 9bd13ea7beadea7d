#include "backend/protocol/config/shard_pattern.h"

#include <gtest/gtest.h>

namespace fs::protocol {
namespace {

using V = std::vector<std::string>;

TEST(ShardPattern, ZeroPaddedRange) {
  auto v = expandShards("/d/{000..003}.tar");
  ASSERT_TRUE(v.isOk());
  EXPECT_EQ(v.value(), (V{"/d/000.tar", "/d/001.tar", "/d/002.tar", "/d/003.tar"}));
  EXPECT_EQ(countShards("/data/laion/{00000..09999}.tar").value(), 10000u);
}

TEST(ShardPattern, AlternativesStepsDescendingAndNesting) {
  EXPECT_EQ(expandShards("{a,b}-{1..2}").value(), (V{"a-1", "a-2", "b-1", "b-2"}));
  EXPECT_EQ(expandShards("x{0..10..5}").value(), (V{"x0", "x5", "x10"}));
  EXPECT_EQ(expandShards("{3..1}").value(), (V{"3", "2", "1"}));
  EXPECT_EQ(expandShards("{a,b{1..2}}z").value(), (V{"az", "b1z", "b2z"}));
  EXPECT_EQ(expandShards("plain.tar").value(), (V{"plain.tar"}));
}

TEST(ShardPattern, SeveralPatternsAndPipes) {
  EXPECT_EQ(countShards("/a/{0..9}.tar::/b/{00..19}.tar").value(), 30u);
  auto v = expandShards("pipe:aws s3 cp s3://b/{0..1}.tar -");
  ASSERT_TRUE(v.isOk());
  EXPECT_EQ(v.value(), (V{"pipe:aws s3 cp s3://b/0.tar -", "pipe:aws s3 cp s3://b/1.tar -"}));
}

TEST(ShardPattern, HugeCountsWithoutExpanding) {
  EXPECT_EQ(countShards("{0..99999}/{0..99999}/{0..99}").value(), 1000000000000ull);
  auto v = expandShards("{0..99999}/{0..99}", 1000);
  ASSERT_FALSE(v.isOk());
  EXPECT_NE(v.status().message().find("more than the limit of 1000"), std::string::npos);
}

TEST(ShardPattern, FirstShardsStopsEarly) {
  EXPECT_EQ(firstShards("{a,b{0..99999}}/{0..99999}", 3).value(), (V{"a/0", "a/1", "a/2"}));
  EXPECT_EQ(firstShards("x{0..1}::y", 10).value(), (V{"x0", "x1", "y"}));
  EXPECT_EQ(firstShards("{a,b}{0..1}", 3).value(), (V{"a0", "a1", "b0"}));
  EXPECT_FALSE(firstShards("{x", 3).isOk());
}

// NOTE [braceexpand grammar]; the lists are braceexpand 0.1.7's (also checked
// against the package itself by shard_webdataset_reader_oracle_test).
TEST(ShardPattern, ExpandsAsBraceexpand) {
  const std::vector<std::pair<std::string, V>> cases = {
      {"{a}", {"{a}"}},
      {"{}", {"{}"}},
      {"{{a,b}}", {"{a}", "{b}"}},
      {"/d/{0..x}.tar", {"/d/{0..x}.tar"}},
      {"/d/{0..9..0}.tar",
       {"/d/0.tar", "/d/1.tar", "/d/2.tar", "/d/3.tar", "/d/4.tar", "/d/5.tar", "/d/6.tar", "/d/7.tar",
        "/d/8.tar", "/d/9.tar"}},
      {"{1..2,3}", {"1..2", "3"}},
      {"{a..e..2}", {"a", "c", "e"}},
      {"{Y..b}", {"Y", "Z", "a", "b"}},
      {"{z..A..10}", {"z", "p", "f", "V", "L", "B"}},
      {"{0..4..-2}", {"0", "2", "4"}},
      {"{-01..1}", {"-01", "000", "001"}},
      {"{-0..2}", {"0", "1", "2"}},
      {"{-3..-05}", {"-03", "-04", "-05"}},
      {"{1\\{2,3}", {"1{2", "3"}},
      {"a\\,b{x\\,y,z}", {"a,bx,y", "a,bz"}},
      {"back\\\\slash", {"back\\slash"}},
      {"trailing\\", {"trailing\\"}},
  };
  for (const auto& [pattern, expected] : cases) {
    auto v = expandShards(pattern);
    ASSERT_TRUE(v.isOk()) << pattern << ": " << v.status().message();
    EXPECT_EQ(v.value(), expected) << pattern;
    EXPECT_EQ(countShards(pattern).value(), expected.size()) << pattern;
  }
  EXPECT_EQ(countPipeShards("{o..p}ipe:cat x").value(), 1u);
  EXPECT_EQ(countPipeShards("{a..z}{a..z}pe:x").value(), 1u);
  EXPECT_EQ(countPipeShards("\\pipe:x").value(), 1u);
}

// NOTE [braceexpand grammar]: braceexpand reads "a}b{c" as literal text and
// gives "{0}" for "{\\\\0}"; neither is copied.
TEST(ShardPattern, BraceexpandQuirksNotCopied) {
  EXPECT_FALSE(countShards("a}b{c").isOk());
  EXPECT_EQ(expandShards("{\\\\0}").value(), V{"{\\0}"});
  EXPECT_EQ(expandShards("x{\\\\a,b}").value(), (V{"x\\a", "xb"}));
}

TEST(ShardPattern, ErrorsNameThePattern) {
  for (const auto& [spec, expected] : std::vector<std::pair<std::string, std::string>>{
           {"/d/{000..009.tar", "is never closed"},
           {"/d/000..009}.tar", "'}' without a matching '{'"},
           {"/d/{0..99999999999999999999}.tar", "does not fit in 64 bits"},
           {"", "shard list is empty"},
           {"/a/x.tar::", "empty part"}}) {
    auto n = countShards(spec);
    ASSERT_FALSE(n.isOk()) << spec;
    EXPECT_NE(n.status().message().find(expected), std::string::npos)
        << spec << " -> " << n.status().message();
  }
}

// NOTE [Pattern limits]: found by fuzz/shard_pattern_fuzzer.cpp (fuzz/regressions/shard_pattern/).
TEST(ShardPattern, RangesAtTheEndsOfInt64CountWithoutOverflow) {
  EXPECT_EQ(countShards("x{-9223372036854775808..9223372036854775807}").value(), uint64_t{1} << 62);
  EXPECT_EQ(countShards("{9223372036854775807..-9223372036854775807..3}").value(), uint64_t{1} << 62);
  EXPECT_EQ(countPipeShards("pipe:{0..9223372036854775807..4611686018427387904}").value(), 2u);
  EXPECT_EQ(expandShards("{9223372036854775806..9223372036854775807}").value(),
            (V{"9223372036854775806", "9223372036854775807"}));
  EXPECT_EQ(expandShards("{-9223372036854775808..-9223372036854775807}").value(),
            (V{"-9223372036854775808", "-9223372036854775807"}));
  EXPECT_EQ(expandShards("{-9223372036854775808..9223372036854775807..9223372036854775807}").value(),
            (V{"-9223372036854775808", "-1", "9223372036854775806"}));
}

TEST(ShardPattern, DeepOrManyBracesAreRefusedBeforeTheStackOverflows) {
  auto deep = countShards(std::string(200000, '{'));
  ASSERT_FALSE(deep.isOk());
  EXPECT_NE(deep.status().message().find("'{' at position 17 is nested deeper than 16 levels"),
            std::string::npos)
      << deep.status().message().substr(0, 300);
  EXPECT_FALSE(countPipeShards(std::string(200000, '{')).isOk());
  std::string many;
  for (int i = 0; i < 100000; ++i) many += "{a}";
  auto n = expandShards(many);
  ASSERT_FALSE(n.isOk());
  EXPECT_NE(n.status().message().find("more than 64 brace groups (the '{' at position 193)"),
            std::string::npos);
  // Up to the limits, as before.
  std::string nested = "pipe:";
  for (int i = 0; i < 16; ++i) nested += "{a,";
  nested += "b" + std::string(16, '}');
  EXPECT_EQ(countShards(nested).value(), 17u);
  EXPECT_EQ(countPipeShards(nested).value(), 17u);
  std::string sixtyFour;
  for (int i = 0; i < 64; ++i) sixtyFour += "{a}";
  EXPECT_EQ(expandShards(sixtyFour).value(), V{sixtyFour});  // "{a}" is literal text, as in braceexpand
}

}  // namespace
}  // namespace fs::protocol
