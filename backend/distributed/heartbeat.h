// NOTE [Heartbeats]: every rank runs a small thread that posts, every
// interval, the collective it last entered (from its CollectiveTrackers: one
// per group, NOTE [Host and device groups] in groups.h) under hb/<rank> in
// the run's store. When a collective fails or times out,
// the error reads the board and says what each peer was doing: inside which
// collective and for how long, or that its heartbeat stopped (the process
// is gone or frozen), or that the store itself is unreachable (rank 0 is
// gone). Rank 0 also turns the board into `heartbeat` events.
//
// With two groups a beat names the collective the rank is inside (else the
// one it entered last) and counts the collectives of both groups, so that
// "behind by" compares like with like: every rank issues the same ones.
//
// The thread uses its own store client, so a collective blocking the
// training thread never delays a beat.
//
// Thread-safety: board() and describePeers() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "backend/distributed/collective_tracker.h"

namespace fs::distributed {

struct PeerBeat {
  int rank = 0;
  bool known = false;  // false: this rank never posted a beat
  CollectiveState state;
  int64_t beatMs = 0;  // unix ms of the beat
};

class Heartbeat {
 public:
  // `store` is a client of its own (not the one the process group uses). `trackers`: the rank's groups'
  // (one or two), which must outlive the heartbeat.
  Heartbeat(c10::intrusive_ptr<c10d::Store> store, int rank, int world,
            std::vector<const CollectiveTracker*> trackers, std::chrono::milliseconds interval);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // Every rank's last beat, rank order. Throws c10::Error when the store is
  // unreachable.
  std::vector<PeerBeat> board();
  // One line about the peers for an error message; never throws.
  std::string describePeers();

 private:
  void loop();
  void post();
  CollectiveState combined() const;  // what a beat says about the trackers

  std::mutex storeMu_;  // the client is used by the beat thread and by board()
  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  int world_;
  std::vector<const CollectiveTracker*> trackers_;
  std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace fs::distributed
