#include "backend/step/step_plan.h"

#include <gtest/gtest.h>

namespace fs::step {
namespace {

TEST(StepPlan, NoAccumulationStepsEveryMicroStep) {
  const StepPlan plan(5, 1);
  for (int64_t s = 0; s < 5; ++s) {
    EXPECT_TRUE(plan.endsWindow(s));
    EXPECT_TRUE(plan.startsWindow(s));
    EXPECT_EQ(plan.windowSize(s), 1);
  }
  EXPECT_EQ(plan.optimizerStepsPerEpoch(), 5);
}

TEST(StepPlan, WindowsAndTheShortLastWindowOfAnEpoch) {
  const StepPlan plan(7, 3);  // windows {0,1,2} {3,4,5} {6}
  const bool ends[] = {false, false, true, false, false, true, true};
  for (int64_t s = 0; s < 7; ++s) EXPECT_EQ(plan.endsWindow(s), ends[s]) << s;
  EXPECT_TRUE(plan.startsWindow(3));
  EXPECT_TRUE(plan.startsWindow(6));
  EXPECT_EQ(plan.windowSize(4), 3);
  EXPECT_EQ(plan.windowSize(6), 1);
  EXPECT_EQ(plan.optimizerStepsPerEpoch(), 3);
  EXPECT_EQ(plan.optimizerStepsBefore(0, 0), 0);
  EXPECT_EQ(plan.optimizerStepsBefore(0, 3), 1);
  EXPECT_EQ(plan.optimizerStepsBefore(0, 6), 2);
  EXPECT_EQ(plan.optimizerStepsBefore(2, 4), 2 * 3 + 1);
  EXPECT_EQ(plan.globalStep(2, 4), 18);
}

TEST(StepPlan, ExactMultipleAndDegenerateInputs) {
  const StepPlan plan(6, 3);
  EXPECT_FALSE(plan.endsWindow(4));
  EXPECT_TRUE(plan.endsWindow(5));
  EXPECT_EQ(plan.optimizerStepsPerEpoch(), 2);
  const StepPlan clamped(0, 0);
  EXPECT_EQ(clamped.accumSteps(), 1);
  EXPECT_EQ(clamped.stepsPerEpoch(), 1);
  EXPECT_TRUE(clamped.endsWindow(0));
  const StepPlan longWindow(4, 10);  // a window longer than the epoch ends at the epoch
  EXPECT_TRUE(longWindow.endsWindow(3));
  EXPECT_EQ(longWindow.windowSize(0), 4);
  EXPECT_EQ(longWindow.optimizerStepsPerEpoch(), 1);
}

}  // namespace
}  // namespace fs::step
