// Which micro-steps end an accumulation window.
//
// NOTE [Accumulation windows]: as the reference, windows are counted within
// an epoch: micro-step k (0-based, in the epoch) ends a window when (k + 1) is
// a multiple of grad_accum_steps or k is the epoch's last step, so an epoch
// whose length is not a multiple ends with a shorter window. The reference
// still divides each loss by grad_accum_steps in that short window (the
// trainer decides whether to follow; windowSize() tells it the real size).
//
// Thread-safety: plain value.
#pragma once

#include <cstdint>

namespace fs::step {

class StepPlan {
 public:
  // REQUIRES: stepsPerEpoch >= 1; accumSteps < 1 is treated as 1.
  StepPlan(int64_t stepsPerEpoch, int64_t accumSteps);

  int64_t stepsPerEpoch() const { return stepsPerEpoch_; }
  int64_t accumSteps() const { return accum_; }
  int64_t optimizerStepsPerEpoch() const;

  // Micro-step `step` of an epoch (0-based).
  bool endsWindow(int64_t step) const;
  bool startsWindow(int64_t step) const { return step % accum_ == 0; }
  // Micro-steps in the window holding `step` (accumSteps, or fewer at the end).
  int64_t windowSize(int64_t step) const;
  // Global micro-step index (the reference's global_step).
  int64_t globalStep(int64_t epoch, int64_t step) const { return epoch * stepsPerEpoch_ + step; }
  // Optimizer steps completed before micro-step `step` of `epoch` runs.
  int64_t optimizerStepsBefore(int64_t epoch, int64_t step) const;

 private:
  int64_t stepsPerEpoch_;
  int64_t accum_;
};

}  // namespace fs::step
