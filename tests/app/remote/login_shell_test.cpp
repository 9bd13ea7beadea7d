// Remote commands under each login shell users have (issue 42 item 7): a real
// sshd whose root runs bash, dash, zsh, fish or tcsh (SshHosts::setLoginShell,
// NOTE [Login shells]) gets the hostile arguments of shell_quote_test; every
// one arrives byte for byte and no canary file appears. A shell we cannot
// quote for, or one SHELL misnames, is refused before any command is sent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/remote/ssh_host.h"
#include "tests/app/remote/hostile_arguments.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/ssh_host_open.h"
#include "tests/fixtures/ssh_hosts.h"

namespace fs::app::remote {
namespace {

namespace fsys = std::filesystem;
using fs::testing::SshHosts;

// One fixture for the suite; each test sets host 0's login shell.
class LoginShellTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { hosts_ = new SshHosts(); }
  static void TearDownTestSuite() {
    delete hosts_;
    hosts_ = nullptr;
  }
  void SetUp() override {
    if (!hosts_->ok()) FS_FIXTURE_UNAVAILABLE(hosts_->error());
    canary_ = hosts_->dir() + "/CANARY";
    fsys::remove(canary_);
  }

  // Host 0 with `shell` as root's login shell, opened as the app does.
  std::shared_ptr<SshHost> hostWithShell(const std::string& shell) {
    if (!hosts_->setSessionEnvironment(0, {}) || !hosts_->setLoginShell(0, shell)) {
      ADD_FAILURE() << hosts_->error();
      return nullptr;
    }
    auto host = fs::testing::openFixtureHost(*hosts_, "h0");
    EXPECT_TRUE(host.isOk()) << host.status().message();
    return host.isOk() ? *host : nullptr;
  }

  void roundTrip(const std::string& shell) {
    if (access(shell.c_str(), X_OK) != 0)
      FS_FIXTURE_UNAVAILABLE(shell + " is not installed (scripts/install-deps.sh)");
    auto host = hostWithShell(shell);
    ASSERT_NE(host, nullptr);
    // The session really runs under it: sshd sets SHELL from the passwd entry.
    auto who = host->run({"sh", "-c", "printf %s \"$SHELL\""});
    ASSERT_TRUE(who.isOk()) << who.status().message();
    ASSERT_EQ(who->out, shell);
    const std::vector<std::string> args = fs::testing::hostileArguments(canary_);
    std::vector<std::string> all = {"printf", "%s\\0"};
    std::string expected;
    for (std::size_t i = 0; i < args.size(); ++i) {
      auto one = host->run({"printf", "%s\\0", args[i]});
      ASSERT_TRUE(one.isOk()) << shell << " argument " << i << ": " << one.status().message();
      EXPECT_EQ(one->exit_code, 0) << shell << " argument " << i << ": " << one->err;
      EXPECT_EQ(one->out, args[i] + std::string(1, '\0')) << shell << " argument " << i;
      all.push_back(args[i]);
      expected += args[i];
      expected += '\0';
    }
    auto together = host->run(all);
    ASSERT_TRUE(together.isOk()) << together.status().message();
    EXPECT_EQ(together->out, expected) << shell;
    // zsh expands a bare =word (=ls: the path of ls); fish and csh their own forms.
    auto equals = host->run({"printf", "%s|", "=ls", "=", "%self", "!!", "{a,b}", "~root"});
    ASSERT_TRUE(equals.isOk()) << equals.status().message();
    EXPECT_EQ(equals->out, "=ls|=|%self|!!|{a,b}|~root|") << shell;
    EXPECT_FALSE(fsys::exists(canary_)) << shell << " ran an injected command";
    // No shell stays between sshd and the program: its signal is the session's.
    auto killed = host->run({"sh", "-c", "kill -TERM $$"});
    ASSERT_TRUE(killed.isOk()) << killed.status().message();
    EXPECT_EQ(killed->signal, "TERM") << shell << ": exit code " << killed->exit_code;
  }

  static SshHosts* hosts_;
  std::string canary_;
};

SshHosts* LoginShellTest::hosts_ = nullptr;

TEST_F(LoginShellTest, Bash) {
  roundTrip("/bin/bash");
}
TEST_F(LoginShellTest, Dash) {
  roundTrip("/bin/dash");
}
TEST_F(LoginShellTest, Zsh) {
  roundTrip("/usr/bin/zsh");
}
TEST_F(LoginShellTest, Fish) {
  roundTrip("/usr/bin/fish");
}
TEST_F(LoginShellTest, Tcsh) {
  roundTrip("/usr/bin/tcsh");
}

// A login shell whose quoting we do not know: refused, naming it; nothing runs.
TEST_F(LoginShellTest, UnknownShellIsRefusedNamingIt) {
  const std::string odd = hosts_->dir() + "/oddsh";
  fsys::remove(odd);
  fsys::create_symlink("/bin/bash", odd);
  auto host = hostWithShell(odd);
  ASSERT_NE(host, nullptr);
  auto run = host->run({"touch", canary_});
  ASSERT_FALSE(run.isOk());
  EXPECT_EQ(run.status().code(), protocol::Status::Code::kUnsupported) << run.status().message();
  EXPECT_NE(run.status().message().find("login shell '" + odd + "'"), std::string::npos)
      << run.status().message();
  EXPECT_FALSE(fsys::exists(canary_));
}

// SHELL says bash while tcsh parses the line: trusting SHELL would send a
// POSIX-quoted newline, which ends a csh quote and runs the next line.
TEST_F(LoginShellTest, ShellVariableThatMisnamesTheShellIsRefused) {
  if (access("/usr/bin/tcsh", X_OK) != 0) FS_FIXTURE_UNAVAILABLE("/usr/bin/tcsh is not installed");
  ASSERT_TRUE(hosts_->setLoginShell(0, "/usr/bin/tcsh")) << hosts_->error();
  ASSERT_TRUE(hosts_->setSessionEnvironment(0, {"SHELL=/bin/bash"})) << hosts_->error();
  auto host = fs::testing::openFixtureHost(*hosts_, "h0");
  ASSERT_TRUE(host.isOk()) << host.status().message();
  auto run = (*host)->run({"printf", "%s", "x\ntouch " + canary_ + "\n"});
  ASSERT_FALSE(run.isOk());
  EXPECT_EQ(run.status().code(), protocol::Status::Code::kUnsupported) << run.status().message();
  EXPECT_NE(run.status().message().find("parsed as csh"), std::string::npos) << run.status().message();
  EXPECT_FALSE(fsys::exists(canary_));
  ASSERT_TRUE(hosts_->setSessionEnvironment(0, {})) << hosts_->error();
}

}  // namespace
}  // namespace fs::app::remote
