// What this rank's communicator is doing, readable from any thread: the
// collective it last entered (name + sequence number), whether it is inside
// it, and since when. The heartbeat publishes it so that a stalled run names
// the rank and the operation it is stuck in (NOTE [Heartbeats] in
// heartbeat.h).
//
// Thread-safety: enter()/leave() from the thread issuing collectives;
// snapshot() from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

namespace fs::distributed {

struct CollectiveState {
  int64_t seq = 0;      // collectives entered so far (the current one included)
  std::string last;     // e.g. "all_reduce ddp bucket 3"
  bool inside = false;  // entered and not yet left
  int64_t sinceMs = 0;  // unix ms of the last enter or leave
};

class CollectiveTracker {
 public:
  // Returns the sequence number given to this collective.
  int64_t enter(std::string what);
  void leave();
  CollectiveState snapshot() const;

 private:
  mutable std::mutex mu_;
  CollectiveState state_;
};

// RAII: enter on construction, leave on destruction (also when it throws).
class CollectiveScope {
 public:
  CollectiveScope(CollectiveTracker& t, std::string what) : t_(t) { t_.enter(std::move(what)); }
  ~CollectiveScope() { t_.leave(); }
  CollectiveScope(const CollectiveScope&) = delete;
  CollectiveScope& operator=(const CollectiveScope&) = delete;

 private:
  CollectiveTracker& t_;
};

}  // namespace fs::distributed
