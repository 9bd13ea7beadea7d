// The SshHosts fixture itself: OpenSSH's own client reaches every alias, and
// the faults do what they say.
#include "tests/fixtures/ssh_hosts.h"

#include <gtest/gtest.h>

#include "tests/fixtures/fixture_unavailable.h"

namespace fs::testing {
namespace {

TEST(SshHostsTest, OpenSshReachesEveryAlias) {
  SshHosts hosts;
  if (!hosts.ok()) FS_FIXTURE_UNAVAILABLE(hosts.error());
  for (int i = 0; i < hosts.hostCount(); ++i)
    EXPECT_EQ(hosts.runOpenSsh(hosts.alias(i), "true"), 0) << hosts.alias(i);
  EXPECT_EQ(hosts.runOpenSsh("agent", "true"), 0);
  // The hidden host is not reachable without the jump host.
  EXPECT_NE(hosts.runOpenSsh("hidden", "true", "-o ProxyJump=none -o ConnectTimeout=2"), 0);
}

TEST(SshHostsTest, FaultsBreakAndRestore) {
  SshHosts hosts;
  if (!hosts.ok()) FS_FIXTURE_UNAVAILABLE(hosts.error());
  ASSERT_TRUE(hosts.setLinkDown(0));
  EXPECT_NE(hosts.runOpenSsh("h0", "true", "-o ConnectTimeout=2"), 0);
  ASSERT_TRUE(hosts.setLinkUp(0));
  EXPECT_EQ(hosts.runOpenSsh("h0", "true"), 0);
  ASSERT_TRUE(hosts.restartSshd(0));
  EXPECT_EQ(hosts.runOpenSsh("h0", "true"), 0);
  ASSERT_TRUE(hosts.rotateHostKey(0));
  EXPECT_NE(hosts.runOpenSsh("h0", "true"), 0);  // known_hosts still has the old key
}

}  // namespace
}  // namespace fs::testing
