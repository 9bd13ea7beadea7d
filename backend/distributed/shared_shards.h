// One node's FSDP shards in shared memory, readable by every rank of it.
//
// NOTE [Node-shared shards]: with the shared-memory transport a gather only
// copies the peers' shards out of the node's segment, but it still waits
// for every peer to *publish* them, i.e. to reach the same unit. The ranks
// of one step do different amounts of work (packed attention computes on
// the real tokens of each rank's batch, which differ), so a rank waits at
// every unit for the slowest peer: a step costs the sum over passes of the
// slowest rank's pass, where DDP, which meets only once a step, costs the
// slowest rank's step. A shard changes only when its rank's optimizer
// steps, so there is nothing to publish per unit: every flat parameter's
// padded buffer lies whole in one segment of the node, each rank writing
// only its shard's part of it. A gather needs no collective: the unit's
// members view the buffer in place (or, for a cast, copy it), and the
// ranks meet only around the writes:
//   - beginWrite(): this rank is done reading the current values; wait
//     until every rank is (they all finished their passes of the step);
//   - endWrite(): this rank's part of every buffer holds the new values;
//   - awaitWritten(): before a gather, every rank has ended the writes this
//     rank has ended, so its part holds the same generation.
// Every rank calls beginWrite / endWrite the same number of times, like a
// collective. The node holds one copy of the shards, as before; a gathered
// unit maps the peers' parts instead of copying them.
//
// Thread-safety: the rank's training thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace fs::distributed {

class ShmSegment;

class SharedShards {
 public:
  SharedShards(std::unique_ptr<ShmSegment> seg, int rank, std::chrono::milliseconds timeout);
  ~SharedShards();
  SharedShards(const SharedShards&) = delete;
  SharedShards& operator=(const SharedShards&) = delete;

  int rank() const { return rank_; }
  int size() const;
  // The shared region: bytes() bytes, 64-byte aligned, the same contents on every rank. Write only your own
  // parts, between beginWrite and endWrite (or before the first endWrite).
  uint8_t* data() const;
  uint64_t bytes() const;

  // Each throws std::runtime_error naming `what` and the peer when a peer died or the timeout passed.
  void awaitWritten(std::string_view what);
  void beginWrite(std::string_view what);
  void endWrite();

 private:
  std::unique_ptr<ShmSegment> seg_;
  int rank_;
  std::chrono::milliseconds timeout_;
  uint64_t generation_ = 0;
  bool writing_ = false;
};

}  // namespace fs::distributed
