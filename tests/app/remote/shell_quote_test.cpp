// protocol::quoteShellWord / shellCommand / loginShellCommand against real shells: hostile
// arguments go through `sh -c "printf '%s\0' ARGS"` (and dash, bash), and
// through `SHELL -c "exec /bin/sh -c ..."` quoted in each login shell's
// dialect (bash, dash, zsh, fish, tcsh), and must come back byte for byte,
// while a canary file that any expansion would create never appears.
#include "app/remote/shell_quote.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "backend/protocol/cmdline/shell_words.h"
#include "tests/app/remote/hostile_arguments.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::app::remote {
namespace {

namespace fsys = std::filesystem;

// Runs `shell -c line` in `dir`; returns its stdout ("" and a failure on error).
std::string runShell(const std::string& shell, const std::string& line, const fsys::path& dir, int* status) {
  int out[2];
  if (pipe(out) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    if (chdir(dir.c_str()) != 0) _exit(126);
    execl(shell.c_str(), shell.c_str(), "-c", line.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  close(out[0]);
  waitpid(pid, status, 0);
  return text;
}

class ShellQuoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fsys::temp_directory_path() / ("fs_shell_quote_" + std::to_string(getpid()));
    fsys::remove_all(dir_);
    fsys::create_directories(dir_);
    canary_ = (dir_ / "CANARY").string();
  }
  void TearDown() override { fsys::remove_all(dir_); }

  // Each argument alone, then all in one command line: out byte for byte, no
  // canary, nothing created. `line` builds the command line for an argv.
  void roundTrip(
      const std::string& shell,
      const std::function<protocol::StatusOr<std::string>(const std::vector<std::string>&)>& line) {
    const std::vector<std::string> args = fs::testing::hostileArguments(canary_);
    ASSERT_GE(args.size(), 200u);
    for (std::size_t i = 0; i < args.size(); ++i) {
      auto one = line({"printf", "%s\\0", args[i]});
      ASSERT_TRUE(one.isOk()) << one.status().message();
      int status = 0;
      const std::string out = runShell(shell, *one, dir_, &status);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << shell << " argument " << i;
      EXPECT_EQ(out, args[i] + std::string(1, '\0')) << shell << " argument " << i << ": " << *one;
    }
    std::vector<std::string> argv = {"printf", "%s\\0"};
    std::string expected;
    for (const std::string& a : args) {
      argv.push_back(a);
      expected += a;
      expected += '\0';
    }
    auto all = line(argv);
    ASSERT_TRUE(all.isOk());
    int status = 0;
    EXPECT_EQ(runShell(shell, *all, dir_, &status), expected) << shell;
    EXPECT_FALSE(fsys::exists(canary_)) << shell << " executed an injected command";
    // Nothing else was created in the working directory (redirections).
    EXPECT_TRUE(fsys::is_empty(dir_)) << shell;
  }

  void roundTrip(const std::string& shell) {
    if (!fsys::exists(shell)) GTEST_SKIP() << shell << " is not installed";
    roundTrip(shell, [](const std::vector<std::string>& argv) { return shellCommand(argv); });
  }

  // As sshd runs a command: `shell -c LINE`, LINE quoted in the shell's dialect.
  void loginRoundTrip(const std::string& shell, LoginShell dialect) {
    if (!fsys::exists(shell)) FS_FIXTURE_UNAVAILABLE(shell + " is not installed (scripts/install-deps.sh)");
    EXPECT_EQ(loginShellOfPath(shell), dialect) << shell;
    roundTrip(shell,
              [dialect](const std::vector<std::string>& argv) { return loginShellCommand(argv, dialect); });
  }

  fsys::path dir_;
  std::string canary_;
};

TEST_F(ShellQuoteTest, QuotesByPosixRules) {
  EXPECT_EQ(protocol::quoteShellWord("it's"), "'it'\\''s'");
  EXPECT_EQ(protocol::quoteShellWord(""), "''");
  EXPECT_EQ(protocol::quoteShellWord("/usr/bin/python3"), "/usr/bin/python3");
  EXPECT_EQ(protocol::quoteShellWord("--lr=0.1,x:y@z%+"), "--lr=0.1,x:y@z%+");
  EXPECT_EQ(protocol::quoteShellWord("a b"), "'a b'");
  EXPECT_EQ(protocol::quoteShellWord("~"), "'~'");
  EXPECT_EQ(protocol::quoteShellWord("*"), "'*'");
  EXPECT_EQ(protocol::quoteShellWord("\xff"), "'\xff'");
}

TEST_F(ShellQuoteTest, CommandJoinsAndQuotesAnAssignmentLikeFirstWord) {
  auto line = shellCommand({"ls", "-l", "my dir"});
  ASSERT_TRUE(line.isOk());
  EXPECT_EQ(*line, "ls -l 'my dir'");
  auto assignment = shellCommand({"A=B", "c=d"});
  ASSERT_TRUE(assignment.isOk());
  EXPECT_EQ(*assignment, "'A=B' c=d");
}

TEST_F(ShellQuoteTest, RejectsNulNamingTheArgument) {
  auto line = shellCommand({"echo", "ok", std::string("a\0b", 3)});
  ASSERT_FALSE(line.isOk());
  EXPECT_EQ(line.status().code(), protocol::Status::Code::kInvalidArgument);
  EXPECT_NE(line.status().message().find("argument 2"), std::string::npos) << line.status().message();
  EXPECT_FALSE(shellCommand({}).isOk());
}

TEST_F(ShellQuoteTest, QuotesEachLoginShellDialect) {
  EXPECT_EQ(protocol::quoteShellWord("=ls"), "'=ls'");  // zsh would expand =ls to the path of ls
  EXPECT_EQ(protocol::quoteShellWord("a=b"), "a=b");
  const std::string text = "it's a\\b!\n";
  EXPECT_EQ(quoteForLoginShell(LoginShell::kPosix, text), "'it'\\''s a\\b!\n'");
  EXPECT_EQ(quoteForLoginShell(LoginShell::kFish, text), "'it\\'s a\\\\b!\n'");
  EXPECT_EQ(quoteForLoginShell(LoginShell::kCsh, text), "'it'\\''s a\\b\\!\\\n'");
  auto line = loginShellCommand({"printf", "%s", "=x"}, LoginShell::kPosix);
  ASSERT_TRUE(line.isOk());
  EXPECT_EQ(*line, "exec /bin/sh -c 'exec printf %s '\\''=x'\\'''");
  EXPECT_FALSE(loginShellCommand({"true"}, LoginShell::kUnknown).isOk());
  EXPECT_FALSE(loginShellCommand({"echo", std::string("a\0b", 3)}, LoginShell::kFish).isOk());
}

TEST_F(ShellQuoteTest, NamesLoginShellsByPath) {
  EXPECT_EQ(loginShellOfPath("/bin/bash"), LoginShell::kPosix);
  EXPECT_EQ(loginShellOfPath("/usr/local/bin/zsh-5.9"), LoginShell::kPosix);
  EXPECT_EQ(loginShellOfPath("/bin/ksh93"), LoginShell::kPosix);
  EXPECT_EQ(loginShellOfPath("/usr/bin/fish"), LoginShell::kFish);
  EXPECT_EQ(loginShellOfPath("/bin/tcsh"), LoginShell::kCsh);
  EXPECT_EQ(loginShellOfPath("csh"), LoginShell::kCsh);
  EXPECT_EQ(loginShellOfPath("/usr/bin/xonsh"), LoginShell::kUnknown);
  EXPECT_EQ(loginShellOfPath("/usr/sbin/nologin"), LoginShell::kUnknown);
  EXPECT_EQ(loginShellOfPath(""), LoginShell::kUnknown);
  EXPECT_EQ(loginShellOfPath("/bin/"), LoginShell::kUnknown);
}

// The probe through each real shell: the parse and SHELL agree, and the
// answer is found after a startup file's output; disagreement is kUnknown.
TEST_F(ShellQuoteTest, ProbeTellsEachShellByItsParse) {
  const std::vector<std::pair<std::string, LoginShell>> shells = {
      {"/bin/sh", LoginShell::kPosix},      {"/bin/dash", LoginShell::kPosix},
      {"/bin/bash", LoginShell::kPosix},    {"/usr/bin/zsh", LoginShell::kPosix},
      {"/usr/bin/fish", LoginShell::kFish}, {"/usr/bin/tcsh", LoginShell::kCsh},
      {"/usr/bin/csh", LoginShell::kCsh}};
  for (const auto& [shell, dialect] : shells) {
    if (!fsys::exists(shell)) FS_FIXTURE_UNAVAILABLE(shell + " is not installed (scripts/install-deps.sh)");
    setenv("SHELL", shell.c_str(), 1);
    int status = 0;
    const std::string out = runShell(shell, kLoginShellProbe, dir_, &status);
    auto probe = parseLoginShellProbe("motd text\n" + out);
    ASSERT_TRUE(probe.isOk()) << shell << ": " << probe.status().message();
    EXPECT_EQ(probe->parsed, dialect) << shell << ": " << out;
    EXPECT_EQ(probe->shell, dialect) << shell << ": " << out;
    EXPECT_EQ(probe->path, shell);
  }
  // SHELL says bash, the parse says csh (a startup file changed SHELL): refused.
  auto mismatch = parseLoginShellProbe("fs-login-shell a\\\\b! /bin/bash\n");
  ASSERT_TRUE(mismatch.isOk());
  EXPECT_EQ(mismatch->parsed, LoginShell::kCsh);
  EXPECT_EQ(mismatch->shell, LoginShell::kUnknown);
  auto unknown = parseLoginShellProbe("fs-login-shell a\\\\b\\! /usr/bin/xonsh\n");
  ASSERT_TRUE(unknown.isOk());
  EXPECT_EQ(unknown->parsed, LoginShell::kPosix);
  EXPECT_EQ(unknown->shell, LoginShell::kUnknown);
  EXPECT_FALSE(parseLoginShellProbe("xonsh: syntax error\n").isOk());
}

TEST_F(ShellQuoteTest, LoginLineRoundTripsThroughBash) {
  loginRoundTrip("/bin/bash", LoginShell::kPosix);
}
TEST_F(ShellQuoteTest, LoginLineRoundTripsThroughDash) {
  loginRoundTrip("/bin/dash", LoginShell::kPosix);
}
TEST_F(ShellQuoteTest, LoginLineRoundTripsThroughZsh) {
  loginRoundTrip("/usr/bin/zsh", LoginShell::kPosix);
}
TEST_F(ShellQuoteTest, LoginLineRoundTripsThroughFish) {
  loginRoundTrip("/usr/bin/fish", LoginShell::kFish);
}
TEST_F(ShellQuoteTest, LoginLineRoundTripsThroughTcsh) {
  loginRoundTrip("/usr/bin/tcsh", LoginShell::kCsh);
}

TEST_F(ShellQuoteTest, RoundTripsThroughBinSh) {
  roundTrip("/bin/sh");
}
TEST_F(ShellQuoteTest, RoundTripsThroughDash) {
  roundTrip("/bin/dash");
}
TEST_F(ShellQuoteTest, RoundTripsThroughBash) {
  roundTrip("/bin/bash");
}

}  // namespace
}  // namespace fs::app::remote
