#include "backend/step/step_plan.h"

#include <algorithm>

namespace fs::step {

StepPlan::StepPlan(int64_t stepsPerEpoch, int64_t accumSteps)
    : stepsPerEpoch_(std::max<int64_t>(1, stepsPerEpoch)), accum_(std::max<int64_t>(1, accumSteps)) {}

int64_t StepPlan::optimizerStepsPerEpoch() const {
  return (stepsPerEpoch_ + accum_ - 1) / accum_;
}

bool StepPlan::endsWindow(int64_t step) const {
  return (step + 1) % accum_ == 0 || step == stepsPerEpoch_ - 1;
}

int64_t StepPlan::windowSize(int64_t step) const {
  const int64_t start = step - step % accum_;
  return std::min(accum_, stepsPerEpoch_ - start);
}

int64_t StepPlan::optimizerStepsBefore(int64_t epoch, int64_t step) const {
  return epoch * optimizerStepsPerEpoch() + step / accum_;
}

}  // namespace fs::step
