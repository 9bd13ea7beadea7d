// launch.env's forms and checks (backend/protocol/config/launch_env.h): variable
// names, the launcher's own variables, NAME=VALUE words, and a rank's environment
// compared with the config. Validation messages: validate_test.
#include "backend/protocol/config/launch_env.h"

#include <gtest/gtest.h>

namespace fs::protocol {
namespace {

TEST(LaunchEnv, VariableNamesAreShellIdentifiers) {
  for (const char* good : {"A", "_", "_x", "OPENBLAS_CORETYPE", "a1", "A_1_b"})
    EXPECT_TRUE(isEnvName(good)) << good;
  for (const char* bad : {"", "1A", "A-B", "A B", "A=B", "A.B", "\xcf\x80", "A\n", "$A"})
    EXPECT_FALSE(isEnvName(bad)) << bad;
}

TEST(LaunchEnv, TheLaunchersVariablesAreRecognised) {
  for (const auto name : kLauncherVariables) EXPECT_TRUE(isLauncherVariable(name)) << name;
  EXPECT_TRUE(isLauncherVariable("SLURM_CPUS_PER_TASK"));
  EXPECT_TRUE(isLauncherVariable("TORCHELASTIC_RESTART_COUNT"));  // a node agent's attempt
  EXPECT_TRUE(isLauncherVariable("FLAMINGO_RESTART_REASON"));
  for (const char* free : {"OPENBLAS_CORETYPE", "OMP_NUM_THREADS", "RANKS", "MY_RANK", "SLURM", "PATH"})
    EXPECT_FALSE(isLauncherVariable(free)) << free;
}

TEST(LaunchEnv, AssignmentsInNameOrder) {
  LaunchConfig l;
  EXPECT_TRUE(launchEnvAssignments(l).empty());
  l.env = {{"ZED", "a b"}, {"ALPHA", ""}, {"MID", "x=y 'q' $(z)"}};
  EXPECT_EQ(launchEnvAssignments(l), (std::vector<std::string>{"ALPHA=", "MID=x=y 'q' $(z)", "ZED=a b"}));
}

TEST(LaunchEnv, DifferencesNameTheFieldAndBothValues) {
  LaunchConfig l;
  l.env = {{"SAME", "1"}, {"OTHER", "Haswell"}, {"MISSING", "x"}, {"EMPTY", ""}};
  const auto d = launchEnvDifferences(l, {{"SAME", "1"}, {"OTHER", "Zen"}, {"EMPTY", ""}, {"EXTRA", "y"}});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], "launch.env.MISSING is 'x' but MISSING is not set in this process");
  EXPECT_EQ(d[1], "launch.env.OTHER is 'Haswell' but this process has OTHER='Zen'");
  EXPECT_TRUE(launchEnvDifferences(LaunchConfig{}, {{"A", "1"}}).empty());
}

}  // namespace
}  // namespace fs::protocol
