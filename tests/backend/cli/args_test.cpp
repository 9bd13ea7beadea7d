#include "backend/cli/args.h"

#include <gtest/gtest.h>

namespace fs::cli {
namespace {

const std::vector<OptionSpec> kSpecs = {
    {"set", true, true, "KEY=VALUE", "override"},
    {"json", false, false, "", "json"},
    {"output", true, false, "FILE", "out", "o"},
};

TEST(Args, ValuesSwitchesPositionalsAndDoubleDash) {
  auto p = parseArgs({"c.yaml", "--set", "a=1", "--set=b=2", "--json", "--", "--not-an-option"}, kSpecs);
  ASSERT_TRUE(p.isOk()) << p.status().message();
  EXPECT_EQ(p->all("set"), (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_TRUE(p->has("json"));
  EXPECT_EQ(p->positionals, (std::vector<std::string>{"c.yaml", "--not-an-option"}));
}

TEST(Args, ShortAlias) {
  auto p = parseArgs({"-o", "x.yaml"}, kSpecs);
  ASSERT_TRUE(p.isOk()) << p.status().message();
  EXPECT_EQ(p->get("output"), "x.yaml");
  EXPECT_FALSE(parseArgs({"-j"}, kSpecs).isOk());
}

TEST(Args, Errors) {
  EXPECT_NE(parseArgs({"--jsno"}, kSpecs).status().message().find("did you mean '--json'?"),
            std::string::npos);
  EXPECT_NE(parseArgs({"--output"}, kSpecs).status().message().find("needs a value (FILE)"),
            std::string::npos);
  EXPECT_NE(parseArgs({"--output", "a", "--output", "b"}, kSpecs).status().message().find("given twice"),
            std::string::npos);
  EXPECT_NE(parseArgs({"--json=1"}, kSpecs).status().message().find("takes no value"), std::string::npos);
}

}  // namespace
}  // namespace fs::cli
