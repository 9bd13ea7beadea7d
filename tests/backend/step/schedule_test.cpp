#include "backend/step/schedule.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <cmath>

#include "tests/backend/step/python_oracle.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::step {
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

// transformers' own schedules (schedule_oracle.py), as OpenFlamingo's train.py
// builds them: the lr after every scheduler step equals base x lrMultiplier.
TEST(Schedule, MatchesTransformersSchedules) {
  if (!fs::test::pythonTorchAvailable())
    FS_FIXTURE_UNAVAILABLE(std::string(FS_PYTHON) + " cannot import torch: run scripts/install-deps.sh");
  const std::vector<std::array<int64_t, 3>> shapes = {{0, 10, 0}, {1, 2, 0}, {3, 50, 0}, {2, 3, 0},
                                                      {7, 7, 0},  {5, 3, 0}, {0, 0, 0},  {40, 1000, 0}};
  std::vector<int64_t> rows;
  for (int64_t kind = 0; kind < 3; ++kind) {
    for (const auto& s : shapes) rows.insert(rows.end(), {kind, s[0], s[1], 2 * s[1] + s[0] + 5});
  }
  const auto cases = torch::tensor(rows, torch::kInt64).view({-1, 4});
  const fs::test::ScratchDir scratch("schedule");
  fs::test::saveForPython(cases, scratch.path + "/in.pt");
  ASSERT_TRUE(fs::test::runOracle("schedule_oracle.py", scratch.path + "/in.pt", scratch.path + "/out.pt"));
  const auto results = fs::test::loadFromPython(scratch.path + "/out.pt").toList();
  ASSERT_EQ(results.size(), static_cast<size_t>(cases.size(0)));
  const ScheduleKind kinds[] = {ScheduleKind::kConstant, ScheduleKind::kLinear, ScheduleKind::kCosine};
  for (int64_t i = 0; i < cases.size(0); ++i) {
    const auto row = cases[i];
    const auto kind = kinds[row[0].item<int64_t>()];
    const int64_t W = row[1].item<int64_t>(), T = row[2].item<int64_t>();
    const auto theirs = results.get(i).toTensor();
    ASSERT_EQ(theirs.size(0), row[3].item<int64_t>());
    for (int64_t s = 0; s < theirs.size(0); ++s) {
      // LambdaLR multiplies base 1.0 by the lambda: the same double, bit for bit.
      EXPECT_EQ(lrMultiplier(kind, s, W, T), theirs[s].item<double>())
          << toString(kind) << " s=" << s << " W=" << W << " T=" << T;
    }
  }
}

}  // namespace
}  // namespace fs::step
