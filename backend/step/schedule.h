// Learning-rate schedules: the Hugging Face LambdaLR multipliers OpenFlamingo
// uses (get_{constant,linear,cosine}_schedule_with_warmup).
//
// With s = scheduler steps taken, W = warmup, T = total:
//   warmup (all kinds)  s < W:  s / max(1, W)
//   constant            1
//   linear              max(0, (T - s) / max(1, T - W))
//   cosine              max(0, 0.5 (1 + cos(pi p))),  p = (s - W) / max(1, T - W)
// So with W > 0 the first optimizer step runs at lr 0, and past T the cosine
// rises again (p > 1) exactly as the reference's does. lr = base_lr x
// multiplier, evaluated in double as Python does.
//
// NOTE [LambdaLR state]: PyTorch's LambdaLR calls step() once when built, so
// after n scheduler steps its state is last_epoch = n, _step_count = n + 1,
// _last_lr = base x multiplier(n). LrSchedule mirrors that numbering:
// stepsTaken() is last_epoch.
//
// Thread-safety: LrSchedule is a plain value.
#pragma once

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::step {

enum class ScheduleKind { kConstant, kLinear, kCosine };

// "constant" | "linear" | "cosine"; anything else is constant, as the reference.
ScheduleKind scheduleKindFromName(const std::string& name);
const char* toString(ScheduleKind kind);

double lrMultiplier(ScheduleKind kind, int64_t step, int64_t warmupSteps, int64_t totalSteps);

// PyTorch's LambdaLR.state_dict() layout (lr_lambdas are None per group).
struct LrSchedulerStateDict {
  std::vector<double> baseLrs;
  int64_t lastEpoch = 0;
  int64_t stepCount = 1;  // _step_count
  bool verbose = false;
  bool getLrCalledWithinStep = false;  // _get_lr_called_within_step
  std::vector<double> lastLr;          // _last_lr
};

class LrSchedule {
 public:
  // One base lr per optimizer param group.
  LrSchedule(ScheduleKind kind, std::vector<double> baseLrs, int64_t warmupSteps, int64_t totalSteps);

  ScheduleKind kind() const { return kind_; }
  int64_t warmupSteps() const { return warmup_; }
  int64_t totalSteps() const { return total_; }
  int64_t stepsTaken() const { return steps_; }
  double multiplier() const { return lrMultiplier(kind_, steps_, warmup_, total_); }
  // The lr of group `group` for the next optimizer step.
  double lr(size_t group = 0) const { return baseLrs_.at(group) * multiplier(); }
  const std::vector<double>& baseLrs() const { return baseLrs_; }

  void step() { ++steps_; }
  // Writes lr(g) into every param group g of the optimizer.
  // REQUIRES: as many groups as base lrs.
  void apply(torch::optim::Optimizer& optimizer) const;

  LrSchedulerStateDict stateDict() const;
  // Takes last_epoch and base_lrs (as LambdaLR.load_state_dict does);
  // refuses a different number of groups.
  protocol::Status loadStateDict(const LrSchedulerStateDict& state);

 private:
  ScheduleKind kind_;
  std::vector<double> baseLrs_;
  int64_t warmup_;
  int64_t total_;
  int64_t steps_ = 0;
};

}  // namespace fs::step
