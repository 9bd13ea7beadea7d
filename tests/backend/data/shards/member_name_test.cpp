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

TEST(MemberName, MetaAndNoExtension) {
  EXPECT_EQ(parseMemberName("__key__.txt").kind, Kind::kMeta);
  EXPECT_EQ(parseMemberName("d/__index__").kind, Kind::kMeta);
  EXPECT_EQ(parseMemberName("__x.txt").kind, Kind::kField);
  EXPECT_EQ(parseMemberName("___.txt").kind, Kind::kField);  // too short to both start and end with "__"
  for (const char* n : {"a", ".a", "a.", "dir/", "d.x/a"})
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
