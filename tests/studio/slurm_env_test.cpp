// --slurm-env entries (issue 42, Low): each must be NAME=VALUE, or `env` would
// run the entry as the SLURM command itself; the error names the entry.
#include <gtest/gtest.h>

#include "studio/remote/cli_args.h"

namespace fs::studio::remote {
namespace {

TEST(SlurmEnv, EntriesBecomeAnEnvPrefix) {
  auto none = slurmEnvPrefix({});
  ASSERT_TRUE(none.isOk());
  EXPECT_TRUE(none->empty());
  auto two = slurmEnvPrefix({"SLURM_CONF=/etc/slurm-a/slurm.conf", "_X1=a=b c"});
  ASSERT_TRUE(two.isOk()) << two.status().message();
  EXPECT_EQ(*two, (std::vector<std::string>{"env", "SLURM_CONF=/etc/slurm-a/slurm.conf", "_X1=a=b c"}));
  auto empty = slurmEnvPrefix({"EMPTY="});
  ASSERT_TRUE(empty.isOk());
}

TEST(SlurmEnv, AnythingElseIsRefusedByName) {
  for (const std::string bad : {"touch /tmp/CANARY", "=x", "1X=y", "A-B=c", "A B=c", "", "$(id)=x"}) {
    auto r = slurmEnvPrefix({"OK=1", bad});
    ASSERT_FALSE(r.isOk()) << "'" << bad << "' was accepted";
    EXPECT_NE(r.status().message().find("--slurm-env '" + bad + "': not NAME=VALUE"), std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace fs::studio::remote
