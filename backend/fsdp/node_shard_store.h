// NodeShardStore: a ShardedModel's shards in one node-shared segment
// (NOTE [Node-shared shards] in distributed/shared_shards.h), or why they are
// not, and the write protocol around every write of their values.
//
// Ownership: owned by the ShardedModel, which must destroy it after the flat
// parameters (their shards point into the segment). Holds pointers to those
// flat parameters, which the ShardedModel owns. Thread-safety: the rank's
// training thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/distributed/communicator.h"
#include "backend/distributed/shared_shards.h"
#include "backend/fsdp/flat_param.h"

namespace fs::fsdp {

class NodeShardStore {
 public:
  struct Flat {
    FlatParameter* flat = nullptr;
    std::string unit;  // its unit's path, for errors
  };

  NodeShardStore() = default;
  ~NodeShardStore();
  NodeShardStore(const NodeShardStore&) = delete;
  NodeShardStore& operator=(const NodeShardStore&) = delete;

  // Moves every flat parameter's shard into a segment the shard group shares, when it offers one (every
  // rank of the group calls it with the same flat parameters in the same order); otherwise remembers why
  // not. Once only.
  void share(distributed::Communicator& shardGroup, std::vector<Flat> flats);
  // The shards stay private: `why` is what whyNotShared() says.
  void keepPrivate(std::string why) { whyNot_ = std::move(why); }

  bool shared() const { return segment_ != nullptr; }
  const std::string& whyNotShared() const { return whyNot_; }

  // No-ops when not shared (ShardedModel::beginShardWrite / endShardWrite).
  void beginWrite();
  void endWrite();
  // Before a gather of `unit`: every rank has ended its writes.
  void awaitWritten(std::string_view unit);
  // A shard written outside beginWrite / endWrite may have been read half-done by a peer: throws
  // c10::Error naming it.
  void checkUnwritten() const;

 private:
  std::unique_ptr<distributed::SharedShards> segment_;
  std::string whyNot_;
  std::vector<Flat> flats_;
  std::vector<int64_t> versions_;  // per flat: its shard's version after the last write
  int64_t ownBytes_ = 0;           // this rank's shards in the segment, counted by the memory tracker
};

}  // namespace fs::fsdp
