// HeartbeatBoard: per rank, where its collectives stand, from heartbeat events.
//
// See NOTE [Heartbeat board] in heartbeat_board.cpp.
//
// Thread-safety: a plain value, used on the GUI thread by RunMonitor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/protocol/wire/events.h"

namespace fs::app {

struct RankBeat {
  int rank = 0;
  std::string last_collective;      // e.g. "all_gather lang_encoder.layers.3"
  std::int64_t collective_seq = 0;  // collectives issued so far
  std::int64_t behind = 0;          // the most advanced rank's seq minus this one's
  std::int64_t since_ms = 0;        // event time of the heartbeat that first showed this seq
  std::int64_t last_seen_ms = 0;    // event time of the latest heartbeat naming this rank
};

class HeartbeatBoard {
 public:
  // One heartbeat event at event time `tMs` (unix ms). Without `ranks`, nothing changes.
  void update(const protocol::HeartbeatEvent& beat, std::int64_t tMs);
  void clear();

  // By rank, ascending.
  const std::vector<RankBeat>& ranks() const { return ranks_; }
  // Event time of the latest heartbeat that carried ranks; 0 before any.
  std::int64_t latestMs() const { return latest_ms_; }
  // Milliseconds rank `r`'s seq has not advanced, by event time (latestMs() - since_ms).
  std::int64_t stuckMs(const RankBeat& r) const { return latest_ms_ - r.since_ms; }
  // The ranks the others wait on: those furthest behind, when any rank is behind at all.
  std::vector<int> waitedOn() const;

 private:
  std::vector<RankBeat> ranks_;
  std::int64_t latest_ms_ = 0;
};

}  // namespace fs::app
