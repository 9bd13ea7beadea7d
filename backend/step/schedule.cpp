#include "backend/step/schedule.h"

#include <algorithm>
#include <cmath>

namespace fs::step {

ScheduleKind scheduleKindFromName(const std::string& name) {
  if (name == "linear") return ScheduleKind::kLinear;
  if (name == "cosine") return ScheduleKind::kCosine;
  return ScheduleKind::kConstant;
}

const char* toString(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kLinear:
      return "linear";
    case ScheduleKind::kCosine:
      return "cosine";
    case ScheduleKind::kConstant:
      break;
  }
  return "constant";
}

double lrMultiplier(ScheduleKind kind, int64_t s, int64_t warmup, int64_t total) {
  if (s < warmup) return static_cast<double>(s) / static_cast<double>(std::max<int64_t>(1, warmup));
  switch (kind) {
    case ScheduleKind::kConstant:
      return 1.0;
    case ScheduleKind::kLinear:
      return std::max(
          0.0, static_cast<double>(total - s) / static_cast<double>(std::max<int64_t>(1, total - warmup)));
    case ScheduleKind::kCosine: {
      const double progress =
          static_cast<double>(s - warmup) / static_cast<double>(std::max<int64_t>(1, total - warmup));
      // HF: cos(pi * num_cycles * 2 * progress) with num_cycles = 0.5.
      return std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * 0.5 * 2.0 * progress)));
    }
  }
  return 1.0;
}

LrSchedule::LrSchedule(ScheduleKind kind, std::vector<double> baseLrs, int64_t warmupSteps,
                       int64_t totalSteps)
    : kind_(kind), baseLrs_(std::move(baseLrs)), warmup_(warmupSteps), total_(totalSteps) {}

void LrSchedule::apply(torch::optim::Optimizer& optimizer) const {
  auto& groups = optimizer.param_groups();
  TORCH_CHECK(groups.size() == baseLrs_.size(), "LrSchedule: ", baseLrs_.size(), " base lrs for ",
              groups.size(), " param groups");
  const double m = multiplier();
  for (size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(baseLrs_[g] * m);
}

LrSchedulerStateDict LrSchedule::stateDict() const {
  LrSchedulerStateDict s;
  s.baseLrs = baseLrs_;
  s.lastEpoch = steps_;
  s.stepCount = steps_ + 1;
  for (size_t g = 0; g < baseLrs_.size(); ++g) s.lastLr.push_back(lr(g));
  return s;
}

protocol::Status LrSchedule::loadStateDict(const LrSchedulerStateDict& s) {
  if (s.baseLrs.size() != baseLrs_.size()) {
    return protocol::Status::invalidArgument("lr scheduler state: " + std::to_string(s.baseLrs.size()) +
                                             " param groups saved, the optimizer has " +
                                             std::to_string(baseLrs_.size()));
  }
  if (s.lastEpoch < 0) return protocol::Status::invalidArgument("lr scheduler state: negative last_epoch");
  steps_ = s.lastEpoch;
  baseLrs_ = s.baseLrs;
  return protocol::Status::ok();
}

}  // namespace fs::step
