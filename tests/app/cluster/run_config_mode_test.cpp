// Issue 42 (Low b): a run's config.yaml may carry credentials in its pipe:
// commands; the copy uploaded to a host over SFTP (a real sshd,
// tests/fixtures/ssh_hosts.h) is created 0600, also over an older 0644 one,
// and so is one written on this machine (LocalHost).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "app/launch/run_config_upload.h"
#include "app/remote/local_host.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/ssh_host_open.h"
#include "tests/fixtures/ssh_hosts.h"

namespace fs::app::cluster {
namespace {

const std::string kYaml =
    "data:\n  datasets:\n    - shards: \"pipe:curl -H 'token: s3cret' https://h/a.tar\"\n";

TEST(RunConfigMode, UploadedOverSftpItIsTheOwnersOnly) {
  fs::testing::SshHosts hosts(2);
  if (!hosts.ok()) FS_FIXTURE_UNAVAILABLE("sshd hosts in network namespaces: " + hosts.error());
  auto host = fs::testing::openFixtureHost(hosts, "h0");
  ASSERT_TRUE(host.isOk()) << host.status().message();
  const std::string runDir = "/tmp/fs-config-mode-" + std::to_string(::getpid());
  ASSERT_TRUE((*host)->makeDirs(runDir).isOk());
  ASSERT_TRUE(writeRunConfig(**host, runDir, kYaml).isOk());
  auto info = (*host)->stat(runDir + "/config.yaml");
  ASSERT_TRUE(info.isOk()) << info.status().message();
  EXPECT_EQ(info->mode & 0777, 0600u);
  // What the host itself says, through OpenSSH.
  EXPECT_EQ(hosts.runOpenSsh("h0", "test \"$(stat -c %a " + runDir + "/config.yaml)\" = 600"), 0);
  // Over a config an older build left readable to all: replaced by an owner-only one.
  ASSERT_EQ(hosts.runOpenSsh("h0", "chmod 644 " + runDir + "/config.yaml"), 0);
  ASSERT_TRUE(writeRunConfig(**host, runDir, kYaml + "# again\n").isOk());
  info = (*host)->stat(runDir + "/config.yaml");
  ASSERT_TRUE(info.isOk()) << info.status().message();
  EXPECT_EQ(info->mode & 0777, 0600u);
  auto text = (*host)->readFile(runDir + "/config.yaml", 0, 1u << 20);
  ASSERT_TRUE(text.isOk());
  EXPECT_EQ(*text, kYaml + "# again\n");
  hosts.runOpenSsh("h0", "rm -rf " + runDir);
}

TEST(RunConfigMode, WrittenOnThisMachineItIsTheOwnersOnly) {
  char tmpl[] = "/tmp/fs-config-mode-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string runDir = tmpl;
  remote::LocalHost local;
  ASSERT_TRUE(writeRunConfig(local, runDir, kYaml).isOk());
  struct stat st {};
  ASSERT_EQ(::stat((runDir + "/config.yaml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ::unlink((runDir + "/config.yaml").c_str());
  ::rmdir(runDir.c_str());
}

}  // namespace
}  // namespace fs::app::cluster
