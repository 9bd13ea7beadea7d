#include "backend/telemetry/rank_log.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <regex>

#include "tests/backend/telemetry/telemetry_test_util.h"

namespace fs::telemetry {
namespace {

using protocol::RunDir;
using testing::readAll;
using testing::ScratchDir;

TEST(RankLogTest, WritesTimeRankLevelAndMessage) {
  ScratchDir dir;
  RunDir run(dir.path());
  ASSERT_TRUE(run.create().isOk());
  {
    auto log = openRankLog(run, 3, {.level = spdlog::level::info, .to_stderr = false});
    ASSERT_TRUE(log.isOk()) << log.status().message();
    EXPECT_EQ(log.value()->name(), "rank-3");
    log.value()->info("step {} loss {:.3f}", 12, 2.5);
    log.value()->debug("not written");
    log.value()->warn("slow rank");
  }
  std::string text = readAll(run.rankLogFile(3));
  std::regex line(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \[rank 3\] \[info\] step 12 loss 2\.500\n)"
                  R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \[rank 3\] \[warning\] slow rank\n)");
  EXPECT_TRUE(std::regex_match(text, line)) << text;
}

TEST(RankLogTest, LinesAreOnDiskWithoutClosing) {
  ScratchDir dir;
  RunDir run(dir.path());
  ASSERT_TRUE(run.create().isOk());
  auto log = openRankLog(run, 0, {.to_stderr = false});
  ASSERT_TRUE(log.isOk());
  log.value()->info("before a crash");
  EXPECT_NE(readAll(run.rankLogFile(0)).find("before a crash"), std::string::npos);
}

TEST(RankLogTest, AResumedAttemptAppends) {
  ScratchDir dir;
  RunDir run(dir.path());
  ASSERT_TRUE(run.create().isOk());
  for (const char* msg : {"first attempt", "second attempt"}) {
    auto log = openRankLog(run, 1, {.to_stderr = false});
    ASSERT_TRUE(log.isOk());
    log.value()->info(msg);
  }
  std::string text = readAll(run.rankLogFile(1));
  EXPECT_NE(text.find("first attempt"), std::string::npos);
  EXPECT_NE(text.find("second attempt"), std::string::npos);
}

TEST(RankLogTest, CanBecomeTheDefaultLogger) {
  ScratchDir dir;
  RunDir run(dir.path());
  ASSERT_TRUE(run.create().isOk());
  auto previous = spdlog::default_logger();
  auto log = openRankLog(run, 2, {.to_stderr = false, .make_default = true});
  ASSERT_TRUE(log.isOk());
  spdlog::info("through the default");
  EXPECT_NE(readAll(run.rankLogFile(2)).find("[rank 2] [info] through the default"), std::string::npos);
  spdlog::set_default_logger(previous);
}

TEST(RankLogTest, Errors) {
  ScratchDir dir;
  RunDir run(dir.path());
  EXPECT_EQ(openRankLog(run, -1).status().code(), protocol::Status::Code::kInvalidArgument);
  std::ofstream(dir.path() / "logs") << "a file where logs/ should be";
  auto log = openRankLog(run, 0, {.to_stderr = false});
  ASSERT_FALSE(log.isOk());
  EXPECT_NE(log.status().message().find("logs"), std::string::npos) << log.status().message();
}

}  // namespace
}  // namespace fs::telemetry
