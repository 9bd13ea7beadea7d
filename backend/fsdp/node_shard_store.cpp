#include "backend/fsdp/node_shard_store.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "backend/telemetry/memory_tracker.h"

namespace fs::fsdp {

NodeShardStore::~NodeShardStore() {
  if (ownBytes_ != 0) telemetry::trackExternalBytes(telemetry::Phase::kParameters, -ownBytes_);
}

// NOTE [Node-shared shards]: every rank builds the same flat parameters in the same order, so they agree on
// where each padded buffer lies in the segment.
void NodeShardStore::share(distributed::Communicator& shardGroup, std::vector<Flat> flats) {
  if (shardGroup.size() < 2) {
    whyNot_ = "a shard group of one rank";
    return;
  }
  std::vector<uint64_t> offsets;
  uint64_t bytes = 0;
  for (const auto& f : flats) {
    offsets.push_back(bytes);
    bytes += (static_cast<uint64_t>(f.flat->shardBytes()) * shardGroup.size() + 63) / 64 * 64;
  }
  segment_ = shardGroup.shareShards(bytes, &whyNot_);
  if (!segment_) return;
  flats_ = std::move(flats);
  for (size_t k = 0; k < flats_.size(); ++k) {
    flats_[k].flat->moveShardInto(*segment_, offsets[k]);
    ownBytes_ += flats_[k].flat->shardBytes();  // its part of the node's copy; the rest is the peers'
  }
#ifdef __GLIBC__
  malloc_trim(0);  // the shards' private buffers just freed (sharded_model.cpp: returnFreedMemory)
#endif
  telemetry::trackExternalBytes(telemetry::Phase::kParameters, ownBytes_);
  versions_.resize(flats_.size());
  endWrite();  // the first generation: the values moved in
}

void NodeShardStore::beginWrite() {
  if (segment_) segment_->beginWrite("before writing the shards");
}

void NodeShardStore::endWrite() {
  if (!segment_) return;
  segment_->endWrite();
  for (size_t k = 0; k < flats_.size(); ++k)
    versions_[k] = static_cast<int64_t>(flats_[k].flat->shard()._version());
}

void NodeShardStore::awaitWritten(std::string_view unit) {
  if (segment_) segment_->awaitWritten(unit);
}

void NodeShardStore::checkUnwritten() const {
  for (size_t k = 0; k < flats_.size(); ++k) {
    const FlatParameter& f = *flats_[k].flat;
    TORCH_CHECK(static_cast<int64_t>(f.shard()._version()) == versions_[k], "FSDP: the shard of ",
                f.members().front().name, " (unit ", flats_[k].unit,
                ") was written outside ShardedModel::beginShardWrite() / endShardWrite(); with node-shared "
                "shards (NOTE [Node-shared shards]) its peers may have read it half-written");
  }
}

}  // namespace fs::fsdp
