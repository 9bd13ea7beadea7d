// Which shards a data worker reads, in which order: the shard half of
// OpenFlamingo's pipeline (spec section 3, "Pipeline"), made reproducible.
//
// NOTE [Shard order]: without resampling, pass p of epoch e over a dataset's
// shards is one permutation of the whole list drawn from (seed, epoch, pass),
// the same on every rank; rank r takes positions r, r + world, ...; worker w
// of that rank takes every `workers`-th of those. Ranks and workers therefore
// read disjoint shards within a pass. An epoch is a fixed number of batches,
// so a worker that runs out of shards starts pass p + 1 (the reference's
// with_epoch repeat). With resampling every worker draws shards with
// replacement from its own stream seeded by (seed, epoch, rank, worker).
// The reference's buffered shard shuffle (2000/500, Python's random) is not
// reproduced bit for bit: its properties (same list on all ranks, a new
// order each epoch) are.
//
// Thread-safety: a plan is immutable after construction; the cursors are
// plain values owned by one worker.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/data/rng.h"
#include "backend/protocol/status.h"

namespace fs::data {

struct ShardPlanOptions {
  uint64_t seed = 0;
  int64_t rank = 0;
  int64_t world = 1;
  int64_t workers = 1;
  bool resampled = false;
};

class ShardPlan {
 public:
  // Expands the dataset's shard spec (brace patterns joined by "::", pipe:
  // sources) and checks that every rank's worker gets a shard. `dataset`
  // names the errors.
  static protocol::StatusOr<ShardPlan> create(const std::string& dataset, const std::string& spec,
                                              const ShardPlanOptions& options);

  // A plan over `files`, file paths taken as they are: never expanded, split
  // at "::" or run as pipe: commands (filesOnly() is true). For shards the
  // engine wrote itself (data.source generated, NOTE [Run directory text]).
  static protocol::StatusOr<ShardPlan> fromFiles(const std::string& dataset, std::vector<std::string> files,
                                                 const ShardPlanOptions& options);

  const std::vector<std::string>& shards() const { return shards_; }
  // True for a plan made by fromFiles: readers open its shards as files only.
  bool filesOnly() const { return filesOnly_; }
  const ShardPlanOptions& options() const { return options_; }

  // The shards worker `worker` reads in pass `pass` of `epoch` (resampled:
  // the pass-th block of shards.size() draws).
  std::vector<std::string> workerShards(int64_t epoch, int64_t pass, int64_t worker) const;
  // The same shards as indices into shards().
  std::vector<size_t> workerShardIndices(int64_t epoch, int64_t pass, int64_t worker) const;

 private:
  static protocol::StatusOr<ShardPlan> fromList(const std::string& dataset, std::vector<std::string> list,
                                                const ShardPlanOptions& options, bool filesOnly);

  std::vector<std::string> shards_;
  ShardPlanOptions options_;
  bool filesOnly_ = false;
};

}  // namespace fs::data
