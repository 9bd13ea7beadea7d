#include "backend/data/shards/member_name.h"

#include <gtest/gtest.h>

namespace fs::data {
namespace {

using Kind = MemberName::Kind;

TEST(MemberName, KeyIsUpToFirstDotOfLastComponent) {
  MemberName m = parseMemberName("dir/a.b/c.d.JPG");
  EXPECT_EQ(m.kind, Kind::kField);
  EXPECT_EQ(m.key, "dir/a.b/c");
  EXPECT_EQ(m.ext, "d.jpg");
  EXPECT_EQ(parseMemberName("x.TXT").ext, "txt");
  EXPECT_EQ(parseMemberName("./x.txt").key, "./x");
}

// webdataset's rules (NOTE [Sample grouping]): only a top-level name that
// starts and ends with "__" is metadata; "a." has the empty extension.
TEST(MemberName, MetaAndNoExtension) {
  for (const char* n : {"__index__", "__", "__k__.a__"}) EXPECT_EQ(parseMemberName(n).kind, Kind::kMeta) << n;
  for (const char* n : {"__key__.txt", "d/__x__.txt", "__x.txt", "___.txt"}) {
    EXPECT_EQ(parseMemberName(n).kind, Kind::kField) << n;
  }
  EXPECT_EQ(parseMemberName("d/__x__.txt").key, "d/__x__");
  const MemberName trailing = parseMemberName("d/a.");
  EXPECT_EQ(trailing.kind, Kind::kField);
  EXPECT_EQ(trailing.key, "d/a");
  EXPECT_EQ(trailing.ext, "");
  EXPECT_EQ(parseMemberName("x..Y").ext, ".y");
  for (const char* n : {"a", ".a", "dir/", "d.x/a", "d/__index__"})
    EXPECT_EQ(parseMemberName(n).kind, Kind::kNoExtension) << n;
}

TEST(MemberName, Unsafe) {
  for (const char* n : {"", "/a.txt", "..", "../a.txt", "a/../b.txt", "a/.."})
    EXPECT_TRUE(isUnsafeMemberName(n)) << n;
  for (const char* n : {"a.txt", "./a.txt", "a/..b.txt", "..a/b.txt", "a/b.."})
    EXPECT_FALSE(isUnsafeMemberName(n)) << n;
}

}  // namespace
}  // namespace fs::data
