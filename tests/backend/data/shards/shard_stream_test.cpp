#include "backend/data/shards/shard_stream.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <thread>

#include "tests/backend/data/shards/shard_test_util.h"

namespace fs::data {
namespace {

using testing::TempDir;

std::string readToEnd(ShardStream& s, protocol::Status* error, size_t chunk = 1000) {
  std::string out;
  std::string buf(chunk, '\0');
  for (;;) {
    auto n = s.read(buf.data(), buf.size());
    if (!n.isOk()) {
      *error = n.status();
      return out;
    }
    if (n.value() == 0) return out;
    out.append(buf.data(), n.value());
  }
}

// Reads the command's "ready\n": it has started and written, and now waits.
void readReady(ShardStream& s) {
  std::string got;
  char buf[6];
  while (got.size() < sizeof buf) {
    auto n = s.read(buf, sizeof buf - got.size());
    ASSERT_TRUE(n.isOk()) << n.status().toString();
    ASSERT_GT(n.value(), 0u) << "the command ended before writing 'ready'";
    got.append(buf, n.value());
  }
  ASSERT_EQ(got, "ready\n");
}

// True when this process has no child left, reaped or not.
bool noChildren() {
  int status;
  return ::waitpid(-1, &status, WNOHANG) == -1 && errno == ECHILD;
}

// A process that is gone, or a zombie of someone else (container inits may not reap).
bool processGone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] == 'Z';
}

TEST(ShardStream, FileAndPipeGiveTheSameBytes) {
  TempDir dir;
  std::string content;
  for (int i = 0; i < 100000; ++i) content += static_cast<char>(i * 7);
  std::string path = dir / "f.bin";
  std::ofstream(path, std::ios::binary) << content;
  for (std::string url : {path, "pipe:cat '" + path + "'"}) {
    SCOPED_TRACE(url);
    auto s = openShardStream(url);
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    protocol::Status error;
    EXPECT_EQ(readToEnd(*s.value(), &error, 333), content);
    EXPECT_TRUE(error.isOk()) << error.toString();
    EXPECT_EQ(s.value()->url(), url);
  }
  EXPECT_TRUE(noChildren());
}

// Issue 42 item 1: openShardFile reads a path as a file whatever its text (generated shards
// live under a run directory named by the config): a file named "pipe:..." is read, never run.
TEST(ShardStream, FileOnlyOpenNeverRunsAPipe) {
  TempDir dir;
  const std::string canary = dir / "CANARY";
  const std::string name = "pipe:touch " + canary;
  std::filesystem::create_directories(dir / "pipe:touch " + dir.path().string());
  std::ofstream(dir / name, std::ios::binary) << "shard bytes";
  const std::string cwd = std::filesystem::current_path().string();
  std::filesystem::current_path(dir.path());  // so the relative path "pipe:touch <canary>" names the file
  auto s = openShardFile(name);
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  protocol::Status error;
  EXPECT_EQ(readToEnd(*s.value(), &error), "shard bytes");
  EXPECT_TRUE(error.isOk()) << error.toString();
  EXPECT_FALSE(std::filesystem::exists(canary));
  EXPECT_TRUE(noChildren());
}

TEST(ShardStream, MissingFileIsNotFound) {
  auto s = openShardStream("/nonexistent/x.tar");
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), protocol::Status::Code::kNotFound);
  EXPECT_NE(s.status().message().find("/nonexistent/x.tar"), std::string::npos);
}

TEST(ShardStream, FailingCommandsNameCommandAndStderr) {
  struct Case {
    std::string url, mustContain1, mustContain2;
  };
  for (const Case& c : std::vector<Case>{
           {"pipe:false", "'false'", "exited with status 1"},
           {"pipe:cat /nonexistent/x.tar", "cat /nonexistent/x.tar", "No such file or directory"},
           {"pipe:echo partial; echo oops >&2; kill -9 $$", "killed by signal 9", "oops"},
       }) {
    SCOPED_TRACE(c.url);
    auto s = openShardStream(c.url);
    ASSERT_TRUE(s.isOk());
    protocol::Status error;
    readToEnd(*s.value(), &error);
    ASSERT_FALSE(error.isOk());
    EXPECT_NE(error.message().find(c.mustContain1), std::string::npos) << error.message();
    EXPECT_NE(error.message().find(c.mustContain2), std::string::npos) << error.message();
    char one;
    auto again = s.value()->read(&one, 1);  // sticky
    EXPECT_FALSE(again.isOk());
  }
  EXPECT_TRUE(noChildren());
}

TEST(ShardStream, StderrKeepsOnlyTheTail) {
  auto s = openShardStream("pipe:i=0; while [ $i -lt 3000 ]; do echo line$i >&2; i=$((i+1)); done; exit 2");
  ASSERT_TRUE(s.isOk());
  protocol::Status error;
  readToEnd(*s.value(), &error);
  ASSERT_FALSE(error.isOk());
  EXPECT_NE(error.message().find("line2999"), std::string::npos);
  EXPECT_EQ(error.message().find("line0\n"), std::string::npos);
  EXPECT_LT(error.message().size(), ShardStream::kStderrTailBytes + 200);
}

TEST(ShardStream, EarlyCloseStopsEndlessCommandAndReapsIt) {
  for (bool explicitClose : {true, false}) {
    auto s = openShardStream("pipe:cat /dev/zero");
    ASSERT_TRUE(s.isOk());
    char buf[4096];
    ASSERT_GT(s.value()->read(buf, sizeof buf).value(), 0u);
    if (explicitClose) s.value()->close();
    s.value().reset();
    EXPECT_TRUE(noChildren());
  }
}

TEST(ShardStream, EarlyCloseStopsTheWholeProcessGroup) {
  TempDir dir;
  std::string pidFile = dir / "pid";
  auto s = openShardStream("pipe:sleep 1000 & echo $! > '" + pidFile + "'; echo ready; wait");
  ASSERT_TRUE(s.isOk());
  ASSERT_NO_FATAL_FAILURE(readReady(*s.value()));
  pid_t sleeper = 0;
  std::ifstream(pidFile) >> sleeper;
  ASSERT_GT(sleeper, 0);
  s.value()->close();
  EXPECT_TRUE(noChildren());
  // The grandchild got SIGTERM with the group; give the kernel a moment to finish it.
  for (int i = 0; i < 1000 && !processGone(sleeper); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(processGone(sleeper));
}

TEST(ShardStream, CommandIgnoringSigtermIsKilled) {
  auto s = openShardStream("pipe:trap '' TERM; echo ready; while :; do sleep 0.05; done");
  ASSERT_TRUE(s.isOk());
  ASSERT_NO_FATAL_FAILURE(readReady(*s.value()));
  s.value()->close();
  EXPECT_TRUE(noChildren());
}

// A command that went quiet (`ssh` to a host that stopped answering) must not
// hold a reader that is being stopped: the read wakes with "interrupted".
// Without the interrupt these tests would hang until CTest's timeout.
TEST(ShardStream, InterruptWakesAReadBlockedOnAQuietCommand) {
  ReadInterrupt interrupt;
  auto s = openShardStream("pipe:echo ready; exec sleep 1000", &interrupt);
  ASSERT_TRUE(s.isOk());
  ASSERT_NO_FATAL_FAILURE(readReady(*s.value()));
  protocol::Status blocked;
  std::thread reader([&] {
    char more[16];
    auto n = s.value()->read(more, sizeof more);  // nothing will come
    blocked = n.isOk() ? protocol::Status::ok() : n.status();
  });
  interrupt.trigger();
  reader.join();
  ASSERT_FALSE(blocked.isOk());
  EXPECT_NE(blocked.message().find("interrupted"), std::string::npos) << blocked.message();
  EXPECT_NE(blocked.message().find("sleep 1000"), std::string::npos) << blocked.message();
  char again[4];
  EXPECT_FALSE(s.value()->read(again, sizeof again).isOk());  // sticky
  s.value()->close();
  EXPECT_TRUE(noChildren());
}

// stdout closed, the command still running: the wait for its exit status is
// interrupted too.
TEST(ShardStream, InterruptWakesTheWaitForTheCommandsExit) {
  ReadInterrupt interrupt;
  auto s = openShardStream("pipe:echo data; exec >&-; exec sleep 1000", &interrupt);
  ASSERT_TRUE(s.isOk());
  protocol::Status error;
  std::thread reader([&] { readToEnd(*s.value(), &error); });
  interrupt.trigger();
  reader.join();
  ASSERT_FALSE(error.isOk());
  EXPECT_NE(error.message().find("interrupted"), std::string::npos) << error.message();
  s.value()->close();
  EXPECT_TRUE(noChildren());
}

TEST(ShardStream, TriggeredInterruptFailsReadsUntilReset) {
  ReadInterrupt interrupt;
  EXPECT_FALSE(interrupt.triggered());
  interrupt.trigger();
  interrupt.trigger();
  EXPECT_TRUE(interrupt.triggered());
  {
    auto s = openShardStream("pipe:exec sleep 1000", &interrupt);
    ASSERT_TRUE(s.isOk());
    char buf[4];
    EXPECT_FALSE(s.value()->read(buf, sizeof buf).isOk());
  }
  EXPECT_TRUE(noChildren());
  interrupt.reset();
  EXPECT_FALSE(interrupt.triggered());
  auto s = openShardStream("pipe:printf abc", &interrupt);
  ASSERT_TRUE(s.isOk());
  protocol::Status error;
  EXPECT_EQ(readToEnd(*s.value(), &error), "abc");
  EXPECT_TRUE(error.isOk()) << error.toString();
}

TEST(ShardStream, EmptyPipeCommandIsInvalid) {
  auto s = openShardStream("pipe:");
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), protocol::Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace fs::data
