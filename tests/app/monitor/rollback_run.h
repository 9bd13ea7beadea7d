// A recorded-like events.jsonl of a 2-rank run whose loss-spike guard rolled back once,
// built with the protocol encoder: steps 1..10 (laion's loss spikes at 10), a
// `rollback` 10 -> 6, steps 7..12 again, and heartbeats with per-rank collectives where
// rank 1 stops advancing at the end (a hang the others wait on).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "monitor_test_util.h"

namespace fs::app::testing {

constexpr std::int64_t kRollbackT0 = 1717000000000;

inline protocol::RollbackEvent sampleRollback() {
  protocol::RollbackEvent r;
  r.step = 10;
  r.to_step = 6;
  r.checkpoint = "checkpoints/step-6";
  r.dataset = "laion";
  r.rule = "mad";
  r.reason = "laion loss 9.8 is 14.2 MADs above the window's median 2.99";
  r.losses = {2.995, 2.994, 2.993, 2.992, 9.8};
  r.batches_skipped = 6;
  r.lr_factor = 0.5;
  r.lr_factor_steps = 20;
  r.rollbacks = 1;
  r.max_rollbacks = 3;
  return r;
}

inline protocol::HeartbeatEvent beat(std::int64_t step, std::int64_t seq0, std::int64_t seq1) {
  protocol::HeartbeatEvent h;
  h.step = step;
  h.ranks = {{0, "all_gather lang_encoder.layers." + std::to_string(seq0 % 4), seq0},
             {1, "all_gather lang_encoder.layers." + std::to_string(seq1 % 4), seq1}};
  return h;
}

// The run's events; event k (its seq) is at kRollbackT0 + 1000 k.
inline std::vector<protocol::Event> rollbackRunEvents() {
  std::vector<protocol::Event> events;
  auto add = [&](const protocol::EventBody& body) {
    const auto seq = static_cast<std::uint64_t>(events.size());
    events.push_back(protocol::Event{seq, kRollbackT0 + 1000 * static_cast<std::int64_t>(seq), body});
  };
  protocol::RunStartedEvent started{"run-rollback", "0.1.0", 2,  1,        {"localhost"},
                                    "sha256:0",     12,      12, {"laion"}};
  add(started);
  for (int step = 1; step <= 10; ++step) {
    protocol::StepEvent s = stepBody(step);
    if (step == 10) s.loss["laion"] = 9.8;
    add(s);
  }
  add(sampleRollback());
  for (int step = 7; step <= 12; ++step) add(stepBody(step));
  add(beat(12, 96, 96));
  add(beat(12, 100, 97));  // rank 1 stops at 97 from here on
  add(beat(12, 101, 97));
  add(beat(12, 101, 97));
  return events;
}

// The whole events.jsonl.
inline std::string rollbackRunText() {
  std::string text;
  for (const protocol::Event& e : rollbackRunEvents()) text += protocol::encodeEventLine(e);
  return text;
}

}  // namespace fs::app::testing
