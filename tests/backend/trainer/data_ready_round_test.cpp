// The data-ready round (data_ready_round.h) on three ranks as threads of
// this process over real Gloo on loopback: readiness, control flags, a
// failed source's message on every rank; and ControlRequest's merge and
// flags.
#include "backend/trainer/data_ready_round.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "tests/backend/distributed/thread_ranks.h"

namespace fs::trainer {
namespace {

TEST(ControlRequestTest, MergeKeepsFlagsAndTheLaterOfPauseAndResume) {
  ControlRequest a;
  a.pause = 1;
  a.checkpoint = 1;
  ControlRequest b;
  b.resume = 1;
  a.merge(b);
  EXPECT_EQ(a.pause, 0);
  EXPECT_EQ(a.resume, 1);
  EXPECT_EQ(a.checkpoint, 1);
  ControlRequest c;
  c.stop = 1;
  c.noCheckpoint = 1;
  a.merge(c);
  EXPECT_EQ(a.stop, 1);
  EXPECT_EQ(a.noCheckpoint, 1);
  EXPECT_EQ(a.resume, 1);  // a request without pause or resume leaves them
}

TEST(ControlRequestTest, FlagsRoundTripAndDisagreementStaysPaused) {
  ControlRequest a;
  EXPECT_FALSE(a.any());
  a.kill = 1;
  a.checkpoint = 1;
  EXPECT_TRUE(a.any());
  const auto f = a.flags();
  const ControlRequest b = ControlRequest::fromFlags(f.data());
  EXPECT_EQ(b.flags(), f);
  const std::array<int64_t, ControlRequest::kFields> both = {0, 0, 1, 1, 0, 0};  // pause and resume
  const ControlRequest c = ControlRequest::fromFlags(both.data());
  EXPECT_EQ(c.pause, 1);
  EXPECT_EQ(c.resume, 0);
}

// Every rank's rounds, in order.
std::vector<std::vector<DataRound>> runRounds(const std::vector<std::vector<DataReadiness>>& perRound) {
  std::vector<std::vector<DataRound>> out(3);
  const auto errors = fs::testing::runThreadRanks(3, [&](distributed::Communicator& comm) {
    const auto r = static_cast<size_t>(comm.rank());
    for (const auto& round : perRound) out[r].push_back(agreeDataReady(comm, round[r]));
  });
  for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  return out;
}

DataReadiness ready(bool isReady, const std::string& failure = "") {
  DataReadiness d;
  d.ready = isReady;
  d.failure = failure;
  return d;
}

TEST(DataReadyRoundTest, EveryRankTakesTheSameDecision) {
  // Round 0: all ready, nothing asked. Round 1: rank 1 still waits, rank 0 asks for a checkpoint,
  // rank 2 for a stop. Round 2: all ready, rank 0 asks for a pause.
  std::vector<std::vector<DataReadiness>> rounds = {{ready(true), ready(true), ready(true)},
                                                    {ready(true), ready(false), ready(true)},
                                                    {ready(true), ready(true), ready(true)}};
  rounds[1][0].control.checkpoint = 1;
  rounds[1][2].control.stop = 1;
  rounds[2][0].control.pause = 1;
  const auto out = runRounds(rounds);
  for (size_t r = 0; r < 3; ++r) {
    ASSERT_EQ(out[r].size(), 3u) << "rank " << r;
    EXPECT_TRUE(out[r][0].allReady) << "rank " << r;
    EXPECT_FALSE(out[r][0].control.any()) << "rank " << r;
    EXPECT_EQ(out[r][0].failedRank, -1) << "rank " << r;
    EXPECT_FALSE(out[r][1].allReady) << "rank " << r;
    EXPECT_EQ(out[r][1].control.checkpoint, 1) << "rank " << r;
    EXPECT_EQ(out[r][1].control.stop, 1) << "rank " << r;
    EXPECT_EQ(out[r][1].control.pause, 0) << "rank " << r;
    EXPECT_TRUE(out[r][2].allReady) << "rank " << r;
    EXPECT_EQ(out[r][2].control.pause, 1) << "rank " << r;
    EXPECT_EQ(out[r][2].control.checkpoint, 0) << "rank " << r;
  }
}

TEST(DataReadyRoundTest, AFailedSourcesMessageReachesEveryRank) {
  const std::string one = "data: dataset laion: data worker 0 of rank 1 delivered nothing for 2 s";
  const std::string two =
      "data: dataset mmc4: data worker 1 of rank 2 delivered nothing for 2 s, a longer text";
  const std::string huge(kMaxRoundMessage + 100, 'x');
  std::string cut(kMaxRoundMessage, 'x');
  cut.append(" [...]");
  const auto out = runRounds(
      {{ready(true), ready(false, one), ready(false, two)}, {ready(false), ready(true), ready(false, huge)}});
  for (size_t r = 0; r < 3; ++r) {
    ASSERT_EQ(out[r].size(), 2u) << "rank " << r;
    EXPECT_FALSE(out[r][0].allReady) << "rank " << r;
    EXPECT_EQ(out[r][0].failedRank, 1) << "rank " << r;  // the lowest failed rank
    EXPECT_EQ(out[r][0].failure, one) << "rank " << r;   // its message, not cut to the longer one's size
    EXPECT_EQ(out[r][1].failedRank, 2) << "rank " << r;
    EXPECT_EQ(out[r][1].failure, cut) << "rank " << r;
  }
}

}  // namespace
}  // namespace fs::trainer
