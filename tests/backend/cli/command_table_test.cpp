// The command table against --help: every command and tool in commands()
// answers --help with exit 0, and the options its --help lists are exactly
// the table's (NOTE [One command table] in backend/cli/commands.h), so a
// parser, its help and the bash completion cannot drift apart.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "backend/cli/commands.h"
#include "tests/backend/cli/cli_test_util.h"

namespace fs::cli {
namespace {

struct Help {
  int code = -1;
  std::string out;
};

Help help(const std::vector<std::string>& words) {
  std::ostringstream out, err;
  std::istringstream in;
  Io io{out, err, in};
  std::vector<std::string> argv = {"flamingo-train"};
  argv.insert(argv.end(), words.begin(), words.end());
  argv.push_back("--help");
  Help h;
  h.code = runMain(argv, io);
  h.out = out.str();
  return h;
}

std::set<std::string> tableOptions(const std::vector<OptionSpec>& specs) {
  std::set<std::string> names;
  for (const auto& s : specs) names.insert(s.name);
  return names;
}

TEST(CommandTable, EveryCommandsHelpListsItsTableOptions) {
  ASSERT_FALSE(commands().empty());
  for (const auto& c : commands()) {
    SCOPED_TRACE(c.name);
    const Help h = help({c.name});
    EXPECT_EQ(h.code, kExitOk) << h.out;
    EXPECT_NE(h.out.find("usage: flamingo-train " + c.name), std::string::npos) << h.out;
    if (!c.subcommands.empty()) {
      EXPECT_EQ(c.options, nullptr) << "a command with tools takes no options of its own";
      for (const auto& s : c.subcommands) {
        EXPECT_NE(h.out.find("  " + s.name), std::string::npos) << "tool list lacks " << s.name << "\n"
                                                                << h.out;
      }
      continue;
    }
    if (c.options == nullptr) continue;  // `shards` in a build without data codecs: no options, no tools
    EXPECT_EQ(testing::helpOptionNames(h.out), tableOptions(*c.options)) << h.out;
  }
}

TEST(CommandTable, EveryToolsHelpListsItsTableOptions) {
  int tools = 0;
  for (const auto& c : commands()) {
    for (const auto& s : c.subcommands) {
      SCOPED_TRACE(c.name + " " + s.name);
      ++tools;
      ASSERT_NE(s.options, nullptr);
      const Help h = help({c.name, s.name});
      EXPECT_EQ(h.code, kExitOk) << h.out;
      EXPECT_NE(h.out.find("usage: flamingo-train " + c.name + " " + s.name), std::string::npos) << h.out;
      EXPECT_EQ(testing::helpOptionNames(h.out), tableOptions(*s.options)) << h.out;
    }
  }
  EXPECT_GE(tools, 4);  // checkpoint inspect, diff, state, check in every build
}

TEST(CommandTable, NamesAreUniqueAndEveryOptionHasHelp) {
  std::set<std::string> names;
  auto checkSpecs = [](const std::vector<OptionSpec>& specs) {
    std::set<std::string> seen;
    for (const auto& o : specs) {
      EXPECT_TRUE(seen.insert(o.name).second) << "--" << o.name << " twice";
      EXPECT_FALSE(o.help.empty()) << "--" << o.name;
      EXPECT_EQ(o.takesValue, !o.valueName.empty()) << "--" << o.name << ": a value needs a value name";
    }
  };
  for (const auto& c : commands()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    if (c.options != nullptr) checkSpecs(*c.options);
    std::set<std::string> tools;
    for (const auto& s : c.subcommands) {
      EXPECT_TRUE(tools.insert(s.name).second) << c.name << " " << s.name;
      checkSpecs(*s.options);
    }
  }
}

TEST(CommandTable, UnknownToolIsAUsageErrorWithASuggestion) {
  std::ostringstream out, err;
  std::istringstream in;
  Io io{out, err, in};
  EXPECT_EQ(runMain({"flamingo-train", "checkpoint", "inspekt"}, io), kExitUsage);
  EXPECT_NE(err.str().find("unknown tool 'inspekt'"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("inspect"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace fs::cli
