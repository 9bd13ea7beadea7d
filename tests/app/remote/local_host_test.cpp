// LocalHost against real processes and files in a temporary directory: argv
// reaches the command verbatim, stdin / stdout / stderr, exit codes and signal
// names, timeout and cancel ending the whole process group, the output limit,
// and the file calls with their error codes and messages.
#include "app/remote/local_host.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace fs::app::remote {
namespace {

using Code = protocol::Status::Code;
namespace stdfs = std::filesystem;

class LocalHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stdfs::temp_directory_path() / ("fs_local_host_test." + std::to_string(::getpid()) + "." +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_);
  }
  void TearDown() override { stdfs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // True while `pid` is a live process (a zombie counts as ended).
  static bool alive(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    const auto close = text.rfind(')');
    return close != std::string::npos && text.size() > close + 2 && text[close + 2] != 'Z';
  }

  LocalHost host_;
  stdfs::path dir_;
};

TEST_F(LocalHostTest, ArgumentsReachTheCommandVerbatim) {
  const std::vector<std::string> hostile = {"a b", "'q'", "\"d\"", "$HOME", "`id`", "x;y", "*", "", "\n"};
  std::vector<std::string> argv = {"printf", "[%s]"};
  argv.insert(argv.end(), hostile.begin(), hostile.end());
  auto r = host_.run(argv);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out, "[a b]['q'][\"d\"][$HOME][`id`][x;y][*][][\n]");
  EXPECT_EQ(r->err, "");
}

TEST_F(LocalHostTest, StdinReachesTheCommandAndOutputComesBackWhole) {
  std::string big(3u << 20, 'x');  // past any pipe buffer both ways
  for (std::size_t i = 0; i < big.size(); i += 997) big[i] = static_cast<char>('a' + i % 26);
  ExecOptions o;
  o.stdin_data = big;
  auto r = host_.run({"cat"}, o);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_TRUE(r->out == big) << r->out.size() << " bytes back of " << big.size();
}

TEST_F(LocalHostTest, ACommandThatLeavesItsStdinUnreadDoesNotKillTheCaller) {
  ExecOptions o;
  o.stdin_data.assign(4u << 20, 'x');  // more than a pipe holds: the write meets a closed pipe (EPIPE)
  auto r = host_.run({"true"}, o);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0);
}

TEST_F(LocalHostTest, StderrAndExitCodeAreApart) {
  auto r = host_.run({"sh", "-c", "echo out; echo err >&2; exit 7"});
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_EQ(r->signal, "");
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
}

TEST_F(LocalHostTest, ASignalIsNamed) {
  auto r = host_.run({"sh", "-c", "kill -KILL $$"});
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->exit_code, -1);
  EXPECT_EQ(r->signal, "KILL");
}

TEST_F(LocalHostTest, AMissingCommandIsExitCode127) {
  auto r = host_.run({"fs-no-such-command-" + std::to_string(::getpid())});
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->exit_code, 127);
  EXPECT_NE(r->err.find("command not found"), std::string::npos) << r->err;
  EXPECT_FALSE(host_.run({}).isOk());
}

TEST_F(LocalHostTest, TimeoutEndsTheWholeProcessGroup) {
  ExecOptions o;
  o.timeout_ms = 1'000;
  const std::string pidFile = path("child.pid");
  auto r = host_.run({"sh", "-c", "sleep 300 & echo $! > \"$1\"; wait", "sh", pidFile}, o);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kIOError);
  EXPECT_NE(r.status().message().find("timed out"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("'sh'"), std::string::npos) << r.status().message();
  std::ifstream in(pidFile);
  pid_t child = 0;
  ASSERT_TRUE(in >> child);
  for (int i = 0; i < 500 && alive(child); ++i) ::usleep(10'000);  // hang guard only
  EXPECT_FALSE(alive(child)) << "the command's child " << child << " outlived the timeout";
}

TEST_F(LocalHostTest, CancelEndsTheCommand) {
  std::atomic<bool> cancel{false};
  ExecOptions o;
  o.cancel = &cancel;
  o.timeout_ms = 120'000;
  const std::string started = path("started");
  std::thread canceller([&] {
    while (!stdfs::exists(started)) ::usleep(10'000);
    cancel = true;
  });
  auto r = host_.run({"sh", "-c", "touch \"$1\"; exec sleep 300", "sh", started}, o);
  canceller.join();
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("cancelled"), std::string::npos) << r.status().message();
}

TEST_F(LocalHostTest, OutputPastTheLimitIsCutAndSaysSo) {
  ExecOptions o;
  o.max_output = 1000;
  auto r = host_.run({"head", "-c", "100000", "/dev/zero"}, o);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out.substr(0, 1000), std::string(1000, '\0'));
  EXPECT_NE(r->out.find("99000 more bytes dropped"), std::string::npos) << r->out.substr(1000);
}

TEST_F(LocalHostTest, ADaemonHoldingTheOutputDoesNotHoldTheCall) {
  // The command exits at once; the process it leaves behind keeps stdout open.
  auto r = host_.run({"sh", "-c", "sleep 300 & echo $!"});
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0);
  const pid_t daemon = std::stoi(r->out);
  EXPECT_TRUE(alive(daemon));
  ::kill(daemon, SIGKILL);
}

TEST_F(LocalHostTest, FilesWriteReadStatListRemove) {
  const std::string file = path("a.txt");
  ASSERT_TRUE(host_.writeFileAtomic(file, "hello world", 0640).isOk());
  auto all = host_.readFile(file, 0, 1 << 20);
  ASSERT_TRUE(all.isOk()) << all.status().message();
  EXPECT_EQ(all.value(), "hello world");
  EXPECT_EQ(host_.readFile(file, 6, 3).value(), "wor");
  EXPECT_EQ(host_.readFile(file, 100, 3).value(), "");
  ASSERT_TRUE(host_.writeFileAtomic(file, "new").isOk());
  EXPECT_EQ(host_.readFile(file, 0, 100).value(), "new");

  auto info = host_.stat(file);
  ASSERT_TRUE(info.isOk()) << info.status().message();
  EXPECT_EQ(info->name, file);
  EXPECT_EQ(info->size, 3u);
  EXPECT_FALSE(info->is_dir);
  EXPECT_EQ(info->mode, 0644u);
  EXPECT_GT(info->mtime, 0);

  ASSERT_TRUE(host_.makeDirs(path("d/e/f")).isOk());
  ASSERT_TRUE(host_.makeDirs(path("d/e/f")).isOk());  // again: like mkdir -p
  EXPECT_TRUE(host_.stat(path("d/e")).value().is_dir);
  auto entries = host_.list(dir_.string());
  ASSERT_TRUE(entries.isOk()) << entries.status().message();
  ASSERT_EQ(entries->size(), 2u) << "no temporary file is left beside the written one";
  EXPECT_EQ(entries->at(0).name, "a.txt");
  EXPECT_EQ(entries->at(1).name, "d");
  EXPECT_TRUE(entries->at(1).is_dir);

  EXPECT_TRUE(host_.remove(file).isOk());
  EXPECT_TRUE(host_.remove(path("d/e/f")).isOk());
  EXPECT_EQ(host_.stat(file).status().code(), Code::kNotFound);
}

TEST_F(LocalHostTest, ErrorsNameThePathAndTellMissingFromBroken) {
  const std::string missing = path("missing.txt");
  auto r = host_.readFile(missing, 0, 10);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find(missing), std::string::npos) << r.status().message();
  EXPECT_EQ(host_.list(path("nodir")).status().code(), Code::kNotFound);
  EXPECT_EQ(host_.remove(missing).code(), Code::kNotFound);

  ASSERT_TRUE(host_.writeFileAtomic(path("file"), "x").isOk());
  const auto s = host_.makeDirs(path("file/sub"));
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(path("file")), std::string::npos) << s.message();
  const auto w = host_.writeFileAtomic(path("nodir/x"), "x");
  ASSERT_FALSE(w.isOk());
  EXPECT_NE(w.message().find(path("nodir")), std::string::npos) << w.message();
  ASSERT_TRUE(host_.makeDirs(path("full")).isOk());
  ASSERT_TRUE(host_.writeFileAtomic(path("full/x"), "x").isOk());
  EXPECT_EQ(host_.remove(path("full")).code(), Code::kIOError);  // not empty
}

}  // namespace
}  // namespace fs::app::remote
