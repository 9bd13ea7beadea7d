// Bitwise comparison of two checkpoints' contents (full files, or sharded
// directories read back through readCheckpoint), for the engine tests.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "backend/checkpoint/checkpoint_io.h"

namespace fs::checkpoint::test {

// Model tensors (names, order, bits), optimizer state and param groups,
// scheduler, epoch and resume position.
inline void expectBitwiseEqual(const CheckpointContents& a, const CheckpointContents& b,
                               const std::string& what) {
  ASSERT_EQ(a.modelState.size(), b.modelState.size()) << what;
  for (size_t i = 0; i < a.modelState.size(); ++i) {
    EXPECT_EQ(a.modelState[i].first, b.modelState[i].first) << what;
    EXPECT_TRUE(torch::equal(a.modelState[i].second, b.modelState[i].second))
        << what << " " << a.modelState[i].first;
  }
  ASSERT_EQ(a.optimizer.state.size(), b.optimizer.state.size()) << what;
  for (size_t i = 0; i < a.optimizer.state.size(); ++i) {
    const auto& x = a.optimizer.state[i];
    const auto& y = b.optimizer.state[i];
    EXPECT_EQ(x.index, y.index) << what;
    EXPECT_TRUE(torch::equal(x.step, y.step)) << what << " step of " << x.name;
    EXPECT_TRUE(torch::equal(x.expAvg, y.expAvg)) << what << " exp_avg of " << x.name;
    EXPECT_TRUE(torch::equal(x.expAvgSq, y.expAvgSq)) << what << " exp_avg_sq of " << x.name;
  }
  ASSERT_EQ(a.optimizer.paramGroups.size(), b.optimizer.paramGroups.size()) << what;
  for (size_t g = 0; g < a.optimizer.paramGroups.size(); ++g) {
    EXPECT_EQ(a.optimizer.paramGroups[g].params, b.optimizer.paramGroups[g].params) << what;
    EXPECT_EQ(a.optimizer.paramGroups[g].lr, b.optimizer.paramGroups[g].lr) << what;
    EXPECT_EQ(a.optimizer.paramGroups[g].initialLr, b.optimizer.paramGroups[g].initialLr) << what;
  }
  EXPECT_EQ(a.scheduler.lastEpoch, b.scheduler.lastEpoch) << what;
  EXPECT_EQ(a.scheduler.lastLr, b.scheduler.lastLr) << what;
  EXPECT_EQ(a.epoch, b.epoch) << what;
  EXPECT_EQ(a.resume.step, b.resume.step) << what;
  EXPECT_EQ(a.resume.iteration, b.resume.iteration) << what;
}

}  // namespace fs::checkpoint::test
