// A control-flow request (stop, kill, pause, resume, checkpoint) as a rank
// polled it and as the ranks agree on it: a flag is set when any rank asked
// for it. The ControlLoop polls and acts on it; with several ranks it is
// agreed in the data-ready round (data_ready_round.h) or, while paused, on
// its own (control_loop.cpp).
//
// Thread-safety: a plain value.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace fs::trainer {

struct ControlRequest {
  static constexpr size_t kFields = 6;

  int64_t stop = 0, kill = 0, pause = 0, resume = 0, checkpoint = 0, noCheckpoint = 0;

  // The later of pause and resume wins; other flags stay set.
  void merge(const ControlRequest& o) {
    stop = std::max(stop, o.stop);
    kill = std::max(kill, o.kill);
    noCheckpoint = std::max(noCheckpoint, o.noCheckpoint);
    checkpoint = std::max(checkpoint, o.checkpoint);
    if (o.pause || o.resume) pause = o.pause, resume = o.resume;
  }
  bool any() const { return stop || kill || pause || resume || checkpoint || noCheckpoint; }

  // The flags in a fixed order, for a max-all-reduce over ranks.
  std::array<int64_t, kFields> flags() const { return {stop, kill, pause, resume, checkpoint, noCheckpoint}; }
  // From max-reduced flags (any value > 0 is set). Ranks that disagree
  // about pause and resume stay paused: the safe side.
  static ControlRequest fromFlags(const int64_t* f) {
    auto set = [&](size_t k) -> int64_t { return f[k] > 0 ? 1 : 0; };
    ControlRequest c{set(0), set(1), set(2), set(3), set(4), set(5)};
    if (c.pause && c.resume) c.resume = 0;
    return c;
  }
};

}  // namespace fs::trainer
