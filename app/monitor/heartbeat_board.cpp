#include "app/monitor/heartbeat_board.h"

#include <algorithm>

// NOTE [Heartbeat board]
// A heartbeat event may carry, per rank, the last collective it issued and how many it
// has issued (collective_seq). In a hang every rank but one sits in a collective the
// missing rank never joins: the others have issued more collectives than it, or all
// show the same seq while one of them is still computing. So per rank the board keeps
// its latest collective and seq, how far behind the most advanced rank it is, and the
// event time of the heartbeat at which its seq last changed: "not advanced for" is the
// latest heartbeat's time minus that, by the events' own `t` (never the wall clock),
// so the figures are the same read live or from the file a day later. A rank missing
// from a heartbeat keeps its last row. waitedOn() names the ranks furthest behind.

namespace fs::app {

void HeartbeatBoard::update(const protocol::HeartbeatEvent& beat, std::int64_t tMs) {
  if (beat.ranks.empty()) return;
  latest_ms_ = std::max(latest_ms_, tMs);
  for (const protocol::RankCollective& c : beat.ranks) {
    auto it = std::lower_bound(ranks_.begin(), ranks_.end(), c.rank,
                               [](const RankBeat& r, int rank) { return r.rank < rank; });
    if (it == ranks_.end() || it->rank != c.rank) {
      it = ranks_.insert(it, RankBeat{c.rank, c.last_collective, c.collective_seq, 0, tMs, tMs});
    } else if (it->collective_seq != c.collective_seq || it->last_collective != c.last_collective) {
      it->collective_seq = c.collective_seq;
      it->last_collective = c.last_collective;
      it->since_ms = tMs;
    }
    it->last_seen_ms = tMs;
  }
  std::int64_t most = 0;
  for (const RankBeat& r : ranks_) most = std::max(most, r.collective_seq);
  for (RankBeat& r : ranks_) r.behind = most - r.collective_seq;
}

void HeartbeatBoard::clear() {
  ranks_.clear();
  latest_ms_ = 0;
}

std::vector<int> HeartbeatBoard::waitedOn() const {
  std::int64_t worst = 0;
  for (const RankBeat& r : ranks_) worst = std::max(worst, r.behind);
  std::vector<int> out;
  if (worst == 0) return out;
  for (const RankBeat& r : ranks_)
    if (r.behind == worst) out.push_back(r.rank);
  return out;
}

}  // namespace fs::app
