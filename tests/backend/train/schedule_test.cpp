#include "backend/train/schedule.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

namespace fs::train {
namespace {

// Closed forms written differently from the implementation (valid for T > W):
// linear = 1 - progress, cosine = cos^2(pi progress / 2).
double closedForm(ScheduleKind k, int64_t s, int64_t W, int64_t T) {
  if (s < W) return double(s) / double(W);
  const double span = double(std::max<int64_t>(1, T - W));
  const double p = double(s - W) / span;
  switch (k) {
    case ScheduleKind::kConstant:
      return 1.0;
    case ScheduleKind::kLinear:
      return std::max(0.0, 1.0 - p);
    case ScheduleKind::kCosine: {
      const double c = std::cos(M_PI * p / 2.0);
      return c * c;
    }
  }
  return -1;
}

TEST(Schedule, WarmupBoundaries) {
  for (auto k : {ScheduleKind::kConstant, ScheduleKind::kLinear, ScheduleKind::kCosine}) {
    EXPECT_EQ(lrMultiplier(k, 0, 4, 12), 0.0) << "with warmup the first step runs at lr 0";
    EXPECT_EQ(lrMultiplier(k, 1, 4, 12), 0.25);
    EXPECT_EQ(lrMultiplier(k, 3, 4, 12), 0.75);
    EXPECT_EQ(lrMultiplier(k, 4, 4, 12), 1.0) << "s = W ends the warmup";
    EXPECT_EQ(lrMultiplier(k, 0, 0, 12), 1.0) << "no warmup";
  }
}

TEST(Schedule, HandValuesAfterWarmup) {
  EXPECT_EQ(lrMultiplier(ScheduleKind::kLinear, 8, 4, 12), 0.5);
  EXPECT_EQ(lrMultiplier(ScheduleKind::kLinear, 12, 4, 12), 0.0);
  EXPECT_EQ(lrMultiplier(ScheduleKind::kLinear, 20, 4, 12), 0.0) << "clamped past T";
  EXPECT_NEAR(lrMultiplier(ScheduleKind::kCosine, 8, 4, 12), 0.5, 1e-15);
  EXPECT_EQ(lrMultiplier(ScheduleKind::kCosine, 12, 4, 12), 0.0);
  EXPECT_NEAR(lrMultiplier(ScheduleKind::kCosine, 16, 4, 12), 0.5, 1e-15) << "past T the cosine rises again";
  EXPECT_NEAR(lrMultiplier(ScheduleKind::kCosine, 20, 4, 12), 1.0, 1e-15);
  EXPECT_EQ(lrMultiplier(ScheduleKind::kConstant, 1000, 4, 12), 1.0);
}

TEST(Schedule, ManyStepsAgainstClosedForms) {
  for (auto k : {ScheduleKind::kConstant, ScheduleKind::kLinear, ScheduleKind::kCosine}) {
    for (auto [W, T] :
         {std::pair{0, 10}, std::pair{1, 2}, std::pair{3, 50}, std::pair{5000, 12000}, std::pair{2, 3}}) {
      for (int64_t s = 0; s < 3 * T + W + 5; s += (T > 1000 ? 37 : 1)) {
        EXPECT_NEAR(lrMultiplier(k, s, W, T), closedForm(k, s, W, T), 1e-12)
            << toString(k) << " s=" << s << " W=" << W << " T=" << T;
      }
    }
  }
}

TEST(Schedule, DegenerateLengths) {
  // T <= W: the denominators are max(1, T - W).
  EXPECT_EQ(lrMultiplier(ScheduleKind::kLinear, 5, 5, 3), 0.0);
  EXPECT_EQ(lrMultiplier(ScheduleKind::kCosine, 5, 5, 3), 1.0);
  EXPECT_EQ(lrMultiplier(ScheduleKind::kLinear, 0, 0, 0), 0.0);
  EXPECT_EQ(lrMultiplier(ScheduleKind::kLinear, 7, 7, 7), 0.0);
  EXPECT_EQ(lrMultiplier(ScheduleKind::kCosine, 7, 7, 7), 1.0);
  EXPECT_EQ(lrMultiplier(ScheduleKind::kCosine, 8, 7, 7), 0.0);
}

TEST(Schedule, UnknownNamesFallBackToConstant) {
  EXPECT_EQ(scheduleKindFromName("cosine"), ScheduleKind::kCosine);
  EXPECT_EQ(scheduleKindFromName("linear"), ScheduleKind::kLinear);
  EXPECT_EQ(scheduleKindFromName("constant"), ScheduleKind::kConstant);
  EXPECT_EQ(scheduleKindFromName("polynomial"), ScheduleKind::kConstant);
  EXPECT_EQ(scheduleKindFromName(""), ScheduleKind::kConstant);
}

TEST(LrSchedule, StepsApplyAndLambdaLrStateNumbering) {
  LrSchedule sched(ScheduleKind::kConstant, {1e-4, 1e-4}, 5, 100);
  EXPECT_EQ(sched.lr(), 0.0);
  auto st = sched.stateDict();
  EXPECT_EQ(st.lastEpoch, 0);
  EXPECT_EQ(st.stepCount, 1);
  sched.step();
  // Python: LambdaLR(lambda s: s / 5) after one step: last_epoch 1, _step_count 2, _last_lr 2e-05.
  st = sched.stateDict();
  EXPECT_EQ(st.lastEpoch, 1);
  EXPECT_EQ(st.stepCount, 2);
  EXPECT_EQ(st.lastLr, (std::vector<double>{1e-4 * (1.0 / 5.0), 1e-4 * (1.0 / 5.0)}));
  EXPECT_EQ(st.baseLrs, (std::vector<double>{1e-4, 1e-4}));

  auto a = torch::zeros({2}, torch::requires_grad());
  auto b = torch::zeros({2}, torch::requires_grad());
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{a});
  groups.emplace_back(std::vector<torch::Tensor>{b});
  torch::optim::AdamW opt(std::move(groups), torch::optim::AdamWOptions(1e-4));
  sched.apply(opt);
  for (auto& g : opt.param_groups()) EXPECT_EQ(g.options().get_lr(), 1e-4 * 0.2);

  LrSchedule resumed(ScheduleKind::kConstant, {1e-4, 1e-4}, 5, 100);
  ASSERT_TRUE(resumed.loadStateDict(st).isOk());
  EXPECT_EQ(resumed.stepsTaken(), 1);
  EXPECT_EQ(resumed.lr(), sched.lr());
  st.baseLrs.pop_back();
  EXPECT_FALSE(resumed.loadStateDict(st).isOk());
}

}  // namespace
}  // namespace fs::train
