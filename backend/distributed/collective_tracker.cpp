#include "backend/distributed/collective_tracker.h"

#include <chrono>

namespace fs::distributed {
namespace {
int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

int64_t CollectiveTracker::enter(std::string what) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.last = std::move(what);
  state_.inside = true;
  state_.sinceMs = nowMs();
  return ++state_.seq;
}

void CollectiveTracker::leave() {
  std::lock_guard<std::mutex> lock(mu_);
  state_.inside = false;
  state_.sinceMs = nowMs();
}

CollectiveState CollectiveTracker::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

}  // namespace fs::distributed
