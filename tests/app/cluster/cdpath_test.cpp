// An exported CDPATH on the remote host (issue 42, Low): `cd -- DIR` in the
// fixed scripts would search CDPATH first, go to the wrong directory and print
// it to stdout, inside the output the script's caller parses. A real sshd
// whose sessions export CDPATH pointing at a decoy with the same directory
// names: run roots resolve, run directories are made and agents start in the
// login directory's copies, and nothing lands in the decoy.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "app/cluster/remote_runs.h"
#include "app/launch/ssh/remote_agent.h"
#include "app/launch/ssh/ssh_launch.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/ssh_host_open.h"
#include "tests/fixtures/ssh_hosts.h"

namespace fs::app::cluster {
namespace {

namespace fsys = std::filesystem;

std::string readAll(const fsys::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Cdpath, ExportedCdpathRedirectsNoScript) {
  fs::testing::SshHosts hosts;
  if (!hosts.ok()) FS_FIXTURE_UNAVAILABLE(hosts.error());
  // A login directory of the fixture's own (relative paths resolve there), and
  // a decoy holding the same names, which CDPATH puts first.
  ASSERT_TRUE(hosts.setLoginShell(0, "/bin/bash")) << hosts.error();
  const fsys::path home = hosts.loginHome(0);
  const fsys::path decoy = fsys::path(hosts.dir()) / "decoy";
  for (const char* name : {"runs", "work"}) {
    fsys::create_directories(home / name);
    fsys::create_directories(decoy / name);
  }
  ASSERT_TRUE(hosts.setSessionEnvironment(0, {"CDPATH=" + decoy.string()})) << hosts.error();
  auto opened = fs::testing::openFixtureHost(hosts, "h0");
  ASSERT_TRUE(opened.isOk()) << opened.status().message();
  remote::Host& host = **opened;
  // The fixture works: the sessions see CDPATH, and a plain cd follows it.
  auto plain = host.run({"sh", "-c", "cd -- runs && pwd -P"});
  ASSERT_TRUE(plain.isOk()) << plain.status().message();
  ASSERT_NE(plain->out.find((decoy / "runs").string()), std::string::npos) << plain->out;

  auto run = createRunDirectory(host, "runs", "r");
  ASSERT_TRUE(run.isOk()) << run.status().message();
  EXPECT_EQ(*run, (home / "runs" / "r").string());
  EXPECT_TRUE(fsys::is_directory(home / "runs" / "r"));

  const RemoteRunScan scan = scanRemoteRunRoot(host, QStringLiteral("runs"));
  EXPECT_EQ(scan.root.toStdString(), (home / "runs").string()) << scan.error.toStdString();

  auto agent =
      startDetached(host, "work", "agent.log", {"sh", "-c", "pwd -P > where.tmp && mv where.tmp where"});
  ASSERT_TRUE(agent.isOk()) << agent.status().message();
  // The agent is detached: wait for its file to appear (in either place).
  const fsys::path mine = home / "work" / "where", wrong = decoy / "work" / "where";
  for (int i = 0; i < 3000 && !fsys::exists(mine) && !fsys::exists(wrong); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(readAll(mine), (home / "work").string() + "\n");
  EXPECT_FALSE(fsys::exists(wrong));
  EXPECT_TRUE(fsys::is_empty(decoy / "runs"));
}

}  // namespace
}  // namespace fs::app::cluster
