// The one seam for file writes (backend/protocol/io/write_env.h) and the fault
// env that cuts a write sequence (fault_write_env.h): the real file system's
// operations, and atomicWriteFile cut at each of its operations by an error
// and by a process that dies there.
#include "backend/protocol/io/write_env.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "backend/protocol/io/fault_write_env.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::protocol {
namespace {

namespace stdfs = std::filesystem;

class WriteEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stdfs::temp_directory_path() / ("fs_write_env_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_);
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : stdfs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  stdfs::path dir_;
};

TEST_F(WriteEnvTest, PosixOperations) {
  WriteEnv& env = posixWriteEnv();
  const auto f = dir_ / "a";
  auto file = env.createFile(f, 0644);
  ASSERT_TRUE(file.isOk()) << file.status().message();
  ASSERT_TRUE(file.value()->append("hello world").isOk());
  ASSERT_TRUE(file.value()->truncate(5).isOk());
  ASSERT_TRUE(file.value()->sync().isOk());
  ASSERT_TRUE(file.value()->close().isOk());
  EXPECT_EQ(readSmallFile(f).value(), "hello");

  bool exists = false;
  auto again = env.createFile(f, 0644, &exists);
  EXPECT_FALSE(again.isOk());
  EXPECT_TRUE(exists);
  EXPECT_NE(again.status().message().find(f.string()), std::string::npos) << again.status().message();

  bool created = true;
  auto appended = env.openAppend(f, &created);
  ASSERT_TRUE(appended.isOk());
  EXPECT_FALSE(created);
  ASSERT_TRUE(appended.value()->append(" there").isOk());
  ASSERT_TRUE(appended.value()->close().isOk());
  EXPECT_EQ(readSmallFile(f).value(), "hello there");

  ASSERT_TRUE(env.createDir(dir_ / "d").isOk());
  EXPECT_TRUE(env.createDir(dir_ / "d").isOk()) << "an existing directory is fine";
  EXPECT_FALSE(env.createDir(f).isOk()) << "a file is not a directory";
  auto moved = env.renameNoReplace(f, dir_ / "d" / "a");
  ASSERT_TRUE(moved.isOk() && moved.value());
  ASSERT_TRUE(atomicWriteFile(dir_ / "b", "b").isOk());
  auto refused = env.renameNoReplace(dir_ / "b", dir_ / "d" / "a");
  ASSERT_TRUE(refused.isOk());
  EXPECT_FALSE(refused.value());
  ASSERT_TRUE(env.rename(dir_ / "b", dir_ / "d" / "a").isOk());
  EXPECT_EQ(readSmallFile(dir_ / "d" / "a").value(), "b");
  ASSERT_TRUE(env.syncDir(dir_ / "d").isOk());
  EXPECT_FALSE(env.syncDir(dir_ / "missing").isOk());
  EXPECT_TRUE(env.remove(dir_ / "missing").isOk());
  ASSERT_TRUE(createDirsDurably(env, dir_ / "d" / "e" / "f").isOk());
  ASSERT_TRUE(removeTree(env, dir_ / "d").isOk());
  EXPECT_TRUE(names().empty());
}

TEST_F(WriteEnvTest, AtomicWriteIsSixOperations) {
  FaultWriteEnv env(posixWriteEnv(), {});
  AtomicWriteOptions options;
  options.env = &env;
  ASSERT_TRUE(atomicWriteFile(dir_ / "x.json", "new", options).isOk());
  const auto trace = env.trace();
  ASSERT_EQ(trace.size(), 6u);
  for (size_t i = 0; i < trace.size(); ++i) {
    static const char* kOps[] = {"create ", "append ", "sync ", "close ", "rename ", "syncdir "};
    EXPECT_EQ(trace[i].rfind(kOps[i], 0), 0u) << trace[i];
  }
  EXPECT_NE(trace[4].find("-> " + (dir_ / "x.json").string()), std::string::npos) << trace[4];
}

// An error at any operation: the target keeps its old contents, no temporary is left, and the
// error names the file.
TEST_F(WriteEnvTest, FailedOperationLeavesTheOldFile) {
  const auto target = dir_ / "x.json";
  ASSERT_TRUE(atomicWriteFile(target, "old").isOk());
  for (int n = 1; n <= 6; ++n) {
    FaultWriteEnv env(posixWriteEnv(), {.at = n, .action = FaultWriteEnv::Action::kFail});
    AtomicWriteOptions options;
    options.env = &env;
    Status s = atomicWriteFile(target, "new", options);
    const bool durableAlready = n == 6;  // only the directory sync failed: the rename happened
    EXPECT_TRUE(env.failed());
    ASSERT_FALSE(s.isOk()) << "op " << n;
    EXPECT_NE(s.message().find("injected fault"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(dir_.string()), std::string::npos) << s.message();
    EXPECT_EQ(readSmallFile(target).value(), durableAlready ? "new" : "old") << "op " << n;
    EXPECT_EQ(names(), std::vector<std::string>{"x.json"}) << "op " << n;
    ASSERT_TRUE(atomicWriteFile(target, "old").isOk());
  }
}

// The process dies before each operation in turn (a forked child raises SIGKILL): the target is
// the old file or the new one, and only a temporary file can be left, which removeStaleTempFiles
// removes.
TEST_F(WriteEnvTest, CrashAtEveryOperationLeavesOldOrNew) {
  const auto target = dir_ / "x.json";
  for (int n = 1; n <= 7; ++n) {
    ASSERT_TRUE(atomicWriteFile(target, "old").isOk());
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      FaultWriteEnv env(posixWriteEnv(), {.at = n, .action = FaultWriteEnv::Action::kCrash});
      AtomicWriteOptions options;
      options.env = &env;
      ::_exit(atomicWriteFile(target, "new", options).isOk() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    if (n <= 6) {
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "op " << n;
    } else {
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "no 7th operation: the write completes";
    }
    EXPECT_EQ(readSmallFile(target).value(), n <= 5 ? "old" : "new") << "op " << n;
    std::vector<stdfs::path> removed;
    ASSERT_TRUE(removeStaleTempFiles(dir_, &removed).isOk());
    EXPECT_EQ(removed.size(), n >= 2 && n <= 5 ? 1u : 0u) << "op " << n;
    EXPECT_EQ(names(), std::vector<std::string>{"x.json"}) << "op " << n;
  }
}

TEST_F(WriteEnvTest, WatchCountsOnlyTheChosenPaths) {
  FaultWriteEnv env(posixWriteEnv(),
                    {.at = 1, .action = FaultWriteEnv::Action::kFail, .watch = [](const stdfs::path& p) {
                       return p.filename().string().find("watched") != std::string::npos;
                     }});
  ASSERT_TRUE(env.createDir(dir_ / "other").isOk());
  EXPECT_EQ(env.count(), 0);
  Status s = env.createDir(dir_ / "watched");
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("watched"), std::string::npos) << s.message();
  EXPECT_EQ(env.count(), 1);
  EXPECT_FALSE(stdfs::exists(dir_ / "watched")) << "a failed operation does not happen";
}

}  // namespace
}  // namespace fs::protocol
