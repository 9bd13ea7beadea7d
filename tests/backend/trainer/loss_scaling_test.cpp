// Dynamic loss scaling in the training step (NOTE [Loss scaling in the step]),
// run on CPU at fp32: fp16 itself needs a GPU (tests labelled gpu), but the
// scaling, the overflow skip, the back-off and the checkpointed scale are the
// same code whatever the precision.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/telemetry/stop_signals.h"
#include "backend/trainer/trainer.h"
#include "engine_test_util.h"

namespace fs::trainer {
namespace {

using LossScalingTest = test::RunRootTest;

// S is a power of two: scaling the loss and unscaling the gradients is exact
// in float32, so a scaled run is the unscaled run, bit for bit.
TEST_F(LossScalingTest, APowerOfTwoScaleChangesNoLossAndNoWeight) {
  const auto config = test::tinyConfig({"optim.epochs=1"});
  ASSERT_TRUE(runTraining(config, root_ / "plain", TrainerOptions{}).isOk());
  TrainerOptions scaled;
  scaled.lossScaling = true;
  auto run = runTraining(config, root_ / "scaled", scaled);
  ASSERT_TRUE(run.isOk()) << run.status().message();

  const auto a = test::stepEvents(root_ / "plain"), b = test::stepEvents(root_ / "scaled");
  ASSERT_EQ(a.size(), 16u);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].loss, a[i].loss) << "step " << a[i].step;
    EXPECT_EQ(b[i].grad_norm, a[i].grad_norm) << "step " << a[i].step;
    EXPECT_FALSE(a[i].loss_scale.has_value());
    ASSERT_TRUE(b[i].loss_scale.has_value());
    EXPECT_EQ(*b[i].loss_scale, 65536.0);  // 16 good steps: far from the 2000 that double it
    EXPECT_FALSE(b[i].skipped);
  }
  auto ca = checkpoint::readCheckpoint(root_ / "plain" / "checkpoint_0.pt");
  auto cb = checkpoint::readCheckpoint(root_ / "scaled" / "checkpoint_0.pt");
  ASSERT_TRUE(ca.isOk() && cb.isOk());
  ASSERT_EQ(ca->modelState.size(), cb->modelState.size());
  for (size_t i = 0; i < ca->modelState.size(); ++i) {
    EXPECT_TRUE(torch::equal(ca->modelState[i].second, cb->modelState[i].second)) << ca->modelState[i].first;
  }
  EXPECT_FALSE(ca->resume.gradScaler.has_value());
  ASSERT_TRUE(cb->resume.gradScaler.has_value());
  EXPECT_EQ(cb->resume.gradScaler->scale, 65536.0);
  EXPECT_EQ(cb->resume.gradScaler->growthTracker, 16);
}

// A scale so large that the scaled gradients overflow float32: each such step
// is skipped (no update), reports the scale it used, and the next one uses half.
// Once the gradients fit, training goes on; a later overflow (the gradients
// grow as the gates open) backs off again.
TEST_F(LossScalingTest, OverflowSkipsTheStepAndHalvesTheScaleUntilTheGradientsFit) {
  const auto config = test::tinyConfig({"optim.epochs=1"});
  TrainerOptions scaled;
  scaled.lossScaling = true;
  scaled.initialLossScale = std::ldexp(1.0, 127);  // the largest power of two in float32
  auto run = runTraining(config, root_ / "run", scaled);
  ASSERT_TRUE(run.isOk()) << run.status().message();

  const auto s = test::stepEvents(root_ / "run");
  ASSERT_EQ(s.size(), 16u);  // one event an iteration; a skipped one consumes its batches too
  size_t skipped = 0, firstGood = s.size();
  int64_t sinceSkip = 0;
  double expected = scaled.initialLossScale;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto& e = s[i];
    ASSERT_TRUE(e.loss_scale.has_value());
    EXPECT_EQ(*e.loss_scale, expected) << "step event " << i;
    if (e.skipped) {
      ++skipped;
      sinceSkip = 0;
      EXPECT_FALSE(e.grad_norm.has_value());
      EXPECT_NE(e.skip_reason.find("gradient overflow at loss scale"), std::string::npos) << e.skip_reason;
      expected /= 2;
    } else {
      ++sinceSkip;
      firstGood = std::min(firstGood, i);
      EXPECT_TRUE(e.grad_norm.has_value() && std::isfinite(*e.grad_norm));
    }
  }
  EXPECT_GE(skipped, 1u);
  ASSERT_GE(firstGood, 1u) << "2^127 must overflow the scaled gradients";
  ASSERT_LT(firstGood, s.size()) << "the scale never came down far enough";
  // Scaling touches no forward: the first loss is the unscaled run's.
  ASSERT_TRUE(runTraining(config, root_ / "plain", TrainerOptions{}).isOk());
  EXPECT_EQ(s[0].loss, test::stepEvents(root_ / "plain")[0].loss);

  auto ck = checkpoint::readCheckpoint(root_ / "run" / "checkpoint_0.pt");
  ASSERT_TRUE(ck.isOk()) << ck.status().message();
  ASSERT_TRUE(ck->resume.gradScaler.has_value());
  EXPECT_EQ(ck->resume.gradScaler->scale, expected);
  EXPECT_EQ(ck->resume.gradScaler->growthTracker, sinceSkip);
}

// The scale is part of the checkpoint: a run stopped and resumed continues with
// the scale (and growth count) it had, and ends where an uninterrupted run ends.
TEST_F(LossScalingTest, ResumeContinuesWithTheSavedScale) {
  const auto sets = std::vector<std::string>{"optim.epochs=2", "checkpoint.every_steps=5"};
  TrainerOptions scaled;
  scaled.lossScaling = true;
  scaled.initialLossScale = std::ldexp(1.0, 127);
  ASSERT_TRUE(runTraining(test::tinyConfig(sets), root_ / "full", scaled).isOk());

  TrainerOptions stopAt7 = scaled;
  stopAt7.onProgress = [](const Progress& p) {
    if (p.step == 7) std::raise(SIGTERM);  // the real signal path: graceful stop with a checkpoint
  };
  auto first = runTraining(test::tinyConfig(sets), root_ / "cut", stopAt7);
  ASSERT_TRUE(first.isOk()) << first.status().message();
  ASSERT_EQ(first.value(), TrainOutcome::kStopped);
  telemetry::clearStopRequests();
  TrainerOptions resumed;
  resumed.lossScaling = true;  // its initial scale is not used: the checkpoint's is
  auto second = runTraining(test::tinyConfig(sets), root_ / "cut", resumed);
  ASSERT_TRUE(second.isOk()) << second.status().message();

  // The resumed run repeats no step: its events continue where the first attempt's stopped.
  const auto a = test::stepEvents(root_ / "full"), b = test::stepEvents(root_ / "cut");
  ASSERT_EQ(b.size(), a.size());
  size_t skips = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].step, a[i].step) << "step event " << i;
    EXPECT_EQ(b[i].loss, a[i].loss) << "step event " << i;
    EXPECT_EQ(b[i].skipped, a[i].skipped) << "step event " << i;
    EXPECT_EQ(b[i].loss_scale, a[i].loss_scale) << "step event " << i;
    skips += a[i].skipped && a[i].step > 7 ? 1 : 0;
  }
  EXPECT_GE(skips, 1u) << "no overflow after the resume: the test would not show the scale carried over";
  auto ca = checkpoint::readCheckpoint(root_ / "full" / "checkpoint_1.pt"),
       cb = checkpoint::readCheckpoint(root_ / "cut" / "checkpoint_1.pt");
  ASSERT_TRUE(ca.isOk() && cb.isOk());
  ASSERT_TRUE(ca->resume.gradScaler && cb->resume.gradScaler);
  EXPECT_EQ(cb->resume.gradScaler->scale, ca->resume.gradScaler->scale);
  EXPECT_EQ(cb->resume.gradScaler->growthTracker, ca->resume.gradScaler->growthTracker);
  for (size_t i = 0; i < ca->modelState.size(); ++i) {
    EXPECT_TRUE(torch::equal(ca->modelState[i].second, cb->modelState[i].second)) << ca->modelState[i].first;
  }
}

}  // namespace
}  // namespace fs::trainer
