#include "backend/fsdp_plan/step_walk.h"

#include <algorithm>

namespace fs::fsdp_plan {
namespace {

// Bytes of the window of `k` not-held units starting at `from` along `order`, plus the staging buffer
// of its latest gather when that went through Gloo.
int64_t window(const WalkModel& m, const std::vector<size_t>& order, size_t from, int64_t k) {
  int64_t bytes = 0, staged = 0;
  for (size_t j = from; j < order.size() && k > 0; ++j) {
    const auto& u = m.units[order[j]];
    if (u.held) continue;  // already counted among the held
    bytes += u.gathered;
    staged = u.staged ? u.gathered : 0;
    --k;
  }
  return bytes + staged;
}

}  // namespace

const char* walkPhaseName(WalkPhase phase) {
  switch (phase) {
    case WalkPhase::kForward:
      return "forward";
    case WalkPhase::kHeadForward:
      return "head_forward";
    case WalkPhase::kHeadBackward:
      return "head_backward";
    case WalkPhase::kBackward:
      return "backward";
  }
  return "forward";
}

int64_t walkPeak(const WalkModel& m) {
  int64_t peak = 0;
  for (const auto& moment : walkMoments(m)) peak = std::max(peak, moment.bytes);
  return peak;
}

std::vector<WalkMoment> walkMoments(const WalkModel& m) {
  std::vector<WalkMoment> moments;
  auto at = [&](WalkPhase phase, int unit, int64_t bytes) { moments.push_back({phase, unit, bytes}); };
  int64_t kept = m.rootKept + m.bias;  // the bias from the LM's start; conservatively from the start
  int64_t held = 0;                    // shard_grad_op units kept gathered
  int64_t tiedGathered = 0, tiedGradient = 0;
  std::vector<size_t> forward;
  for (size_t i = 0; i < m.units.size(); ++i) {
    forward.push_back(i);
    if (m.units[i].tied) {
      tiedGathered += m.units[i].held ? 0 : m.units[i].gathered;
      tiedGradient += m.units[i].gradient;
    }
  }
  for (size_t i = 0; i < forward.size(); ++i) {
    const auto& u = m.units[i];
    const int64_t ownWindow = u.held ? u.gathered + window(m, forward, i + 1, m.forwardWindow - 1)
                                     : window(m, forward, i, m.forwardWindow);
    at(WalkPhase::kForward, static_cast<int>(i), m.root + held + ownWindow + kept + u.kept + u.working);
    kept += u.kept;
    if (u.held) held += u.gathered;
  }
  // A tied head's unit is gathered again for the head's product only; the loss runs after its release.
  at(WalkPhase::kHeadForward, -1, m.root + held + tiedGathered + kept + m.headInUnitForward);
  at(WalkPhase::kHeadForward, -1, m.root + held + kept + m.headForward);
  at(WalkPhase::kHeadBackward, -1, m.root + m.rootGradient + held + kept + m.headBackward);
  const int64_t rootGradients = m.rootGradient + tiedGradient;
  at(WalkPhase::kHeadBackward, -1,
     m.root + rootGradients + held + tiedGathered + kept + m.headInUnitBackward);

  std::vector<size_t> backward;
  for (size_t i = m.units.size(); i-- > 0;) {
    if (m.units[i].inBackward) backward.push_back(i);
  }
  int64_t inFlight = 0;  // the previous unit's flat gradient and receive buffer
  for (size_t a = 0; a < backward.size(); ++a) {
    const auto& u = m.units[backward[a]];
    const int64_t own = u.tied ? 0 : u.gradient;  // a tied unit's gradient is counted from the head on
    const int64_t gathered =
        u.held ? window(m, backward, a + 1, m.backwardWindow - 1) : window(m, backward, a, m.backwardWindow);
    at(WalkPhase::kBackward, static_cast<int>(backward[a]),
       m.root + rootGradients + held + gathered + own + inFlight + kept + u.recompute + u.backwardWorking);
    kept -= u.kept;
    if (u.held) held -= u.gathered;
    inFlight = u.reduceCopies * u.gradient;
  }
  return moments;
}

}  // namespace fs::fsdp_plan
