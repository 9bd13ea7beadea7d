// Issue 42 item 1: the fields a run directory is made from refuse shard-spec
// syntax ("::", "pipe:") and control characters, naming the field and value
// (NOTE [Run directory text] in backend/protocol/config/run_location.h).
#include "backend/protocol/config/run_location.h"

#include <gtest/gtest.h>

#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/validate.h"
#include "test_util.h"

namespace fs::protocol {
namespace {

RunConfig tiny() {
  ConfigLoad load = loadConfigFile(test::sourcePath("resources/presets/tiny.yaml"));
  EXPECT_TRUE(load.ok()) << formatProblems(load.problems);
  return load.config;
}

const Problem* errorAt(const std::vector<Problem>& problems, const std::string& path) {
  for (const auto& p : problems) {
    if (p.path == path && p.severity == Problem::Severity::kError) return &p;
  }
  return nullptr;
}

TEST(RunLocation, Issue42PipeInNameIsRefusedByValidation) {
  RunConfig c = tiny();
  c.name = "x::pipe:touch /tmp/CANARY;";
  const auto problems = validateConfig(c);
  const Problem* p = errorAt(problems, "name");
  ASSERT_NE(p, nullptr) << formatProblems(problems);
  EXPECT_NE(p->message.find("'x::pipe:touch /tmp/CANARY;'"), std::string::npos) << p->message;
  EXPECT_NE(p->message.find("'::'"), std::string::npos) << p->message;
}

TEST(RunLocation, Issue42EachFieldIsNamed) {
  struct Case {
    const char* path;
    std::string value;
    const char* says;
  };
  const Case cases[] = {
      {"name", "a::b", "'::'"},
      {"name", "pipe:id", "'pipe:'"},
      {"name", std::string("a\nb"), "control character"},
      {"run_root", "/tmp/pipe:touch x", "'pipe:'"},
      {"run_root", "/tmp/r::s", "'::'"},
      {"run_root", std::string("/tmp/r\x1b[2J"), "control character"},
      {"launch.remote_workdir", "runs::pipe:id", "'::'"},
      {"launch.remote_workdir", std::string("runs\t"), "control character"},
      {"launch.remote_workdir", std::string("runs\x7f"), "control character"},
  };
  for (const auto& k : cases) {
    RunConfig c = tiny();
    if (std::string(k.path) == "name") c.name = k.value;
    if (std::string(k.path) == "run_root") c.run_root = k.value;
    if (std::string(k.path) == "launch.remote_workdir") c.launch.remote_workdir = k.value;
    const auto problems = validateConfig(c);
    const Problem* p = errorAt(problems, k.path);
    ASSERT_NE(p, nullptr) << k.path << " = " << k.value << ":\n" << formatProblems(problems);
    EXPECT_NE(p->message.find(k.says), std::string::npos) << p->message;
    // The value is shown on one line: control characters as \xNN.
    EXPECT_EQ(p->message.find('\n'), std::string::npos) << p->message;
  }
}

TEST(RunLocation, OrdinaryNamesPass) {
  for (const std::string v : {"tiny", "run 1", "a:b", "pipe", "my-pipe_2", "/data/runs/x", "~/runs", "é"}) {
    EXPECT_EQ(runPathTextProblem(v), "") << v;
    RunConfig c = tiny();
    c.name = v;
    c.launch.remote_workdir = v;
    EXPECT_TRUE(checkRunLocation(c).empty()) << v;
  }
}

// Issue 42 (Low): `remote_workdir: ~/runs` made a directory literally named '~'.
TEST(RunLocation, Issue42ARunRootUnderTildeIsUnderTheLoginDirectory) {
  const std::pair<const char*, const char*> cases[] = {
      {"~", "."},         {"~/", "."},
      {"~/runs", "runs"}, {"~//runs/a", "runs/a"},
      {"runs", "runs"},   {"/data/r", "/data/r"},
      {"a/~/b", "a/~/b"}, {"", ""},
  };
  for (const auto& [root, onHost] : cases) {
    auto r = hostRunRoot(root);
    ASSERT_TRUE(r.isOk()) << root << ": " << r.status().message();
    EXPECT_EQ(r.value(), onHost) << root;
  }
  auto other = hostRunRoot("~alice/runs");
  ASSERT_FALSE(other.isOk());
  EXPECT_NE(other.status().message().find("'~alice/runs'"), std::string::npos) << other.status().message();

  RunConfig c = tiny();
  c.launch.remote_workdir = "~alice/runs";
  const auto problems = validateConfig(c);
  const Problem* p = errorAt(problems, "launch.remote_workdir");
  ASSERT_NE(p, nullptr) << formatProblems(problems);
  EXPECT_NE(p->message.find("'~user'"), std::string::npos) << p->message;
}

}  // namespace
}  // namespace fs::protocol
