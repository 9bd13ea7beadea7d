#include "backend/trainer/slow_ranks.h"

#include <gtest/gtest.h>

namespace fs::trainer {
namespace {

TEST(SlowRanks, TheSlowerOfTwoIsComparedWithTheFaster) {
  std::set<int64_t> flagged;
  double median = 0;
  EXPECT_EQ(updateSlowRanks({0.10, 0.30}, &flagged, &median), (std::vector<int64_t>{1}));
  EXPECT_DOUBLE_EQ(median, 0.10);
  EXPECT_TRUE(updateSlowRanks({0.10, 0.12}, &flagged, &median).empty());
}

TEST(SlowRanks, ReportedOnceUntilRecovered) {
  std::set<int64_t> flagged;
  double median = 0;
  const std::vector<double> slowTwo = {0.1, 0.1, 0.5, 0.1};
  EXPECT_EQ(updateSlowRanks(slowTwo, &flagged, &median), (std::vector<int64_t>{2}));
  EXPECT_TRUE(updateSlowRanks(slowTwo, &flagged, &median).empty()) << "still slow: no second report";
  EXPECT_TRUE(updateSlowRanks({0.1, 0.1, 0.1, 0.1}, &flagged, &median).empty());
  EXPECT_TRUE(flagged.empty()) << "recovered";
  EXPECT_EQ(updateSlowRanks(slowTwo, &flagged, &median), (std::vector<int64_t>{2}))
      << "slow again: reported again";
}

TEST(SlowRanks, ExactlyAtTheFactorIsNotSlowAndIdleRanksNeverAre) {
  std::set<int64_t> flagged;
  double median = 0;
  EXPECT_TRUE(updateSlowRanks({0.2, 0.2, 0.3}, &flagged, &median).empty());
  EXPECT_TRUE(updateSlowRanks({0.0, 0.0, 0.0}, &flagged, &median).empty());
  EXPECT_TRUE(updateSlowRanks({}, &flagged, &median).empty());
}

}  // namespace
}  // namespace fs::trainer
