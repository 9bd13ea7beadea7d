// awaitControlAck (`remote stop|kill|...`) on a real events.jsonl through LocalHost:
// it takes the ack of its seq AND verb, and passes over an ack for the same seq with
// another verb (an older client's command that collided with ours).
#include "studio/remote/control_ack.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/remote/local_host.h"
#include "backend/protocol/wire/event_codec.h"
#include "studio/remote/remote_cli.h"

namespace fs::studio::remote {
namespace {

namespace stdfs = std::filesystem;

protocol::ControlAckEvent ack(std::uint64_t seq, const char* verb, bool ok, std::int64_t step,
                              const char* message) {
  protocol::ControlAckEvent a;
  a.control_seq = seq;
  a.verb = verb;
  a.ok = ok;
  a.step = step;
  a.message = message;
  return a;
}

class AwaitAckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = stdfs::temp_directory_path() / ("fs_control_ack_test_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    protocol::EventEncoder encoder(0, [] { return std::int64_t{1717000000000}; });
    std::ofstream(file_) << encoder.encode(protocol::StateEvent{protocol::RunState::kRunning, ""})
                         << encoder.encode(ack(3, "stop", false, 40, "rejected: not ours"))
                         << encoder.encode(ack(2, "pause", true, 40, "paused after step 40"))
                         << encoder.encode(ack(3, "pause", true, 41, "paused after step 41"));
  }
  void TearDown() override { stdfs::remove(file_); }

  stdfs::path file_;
  app::remote::LocalHost host_;
  std::ostringstream out_, err_;
};

TEST_F(AwaitAckTest, TakesTheAckOfItsSeqAndVerb) {
  EXPECT_EQ(awaitControlAck(host_, file_.string(), 0, 3, "pause", 0, out_, err_), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "done: pause (seq 3) at step 41: paused after step 41\n");
}

TEST_F(AwaitAckTest, AnAckOfItsSeqWithAnotherVerbIsNotItsAnswer) {
  EXPECT_EQ(awaitControlAck(host_, file_.string(), 0, 3, "kill", 0, out_, err_), kExitFailure);
  EXPECT_EQ(out_.str(), "");
  EXPECT_NE(err_.str().find("local: no control_ack for kill (seq 3) within 0 s"), std::string::npos)
      << err_.str();
}

TEST_F(AwaitAckTest, RefusalIsReportedAsSuch) {
  EXPECT_EQ(awaitControlAck(host_, file_.string(), 0, 3, "stop", 0, out_, err_), kExitFailure);
  EXPECT_EQ(out_.str(), "refused: stop (seq 3) at step 40: rejected: not ours\n");
}

}  // namespace
}  // namespace fs::studio::remote
