// index.json of a sharded checkpoint (NOTE [Sharded checkpoints] in
// checkpoint_sharded.h), engine side. Its fields and their codec are the
// protocol's (backend/protocol/wire/sharded_index.h, which shows the format);
// this file turns the record's optimizer, scheduler and resume parts into
// the engine's types (hex into bytes, the data position's JSON into a
// DataPosition) and back, and adds the layout checks a reader of rank files
// relies on. A reader rejects a version other than kShardedIndexVersion.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/protocol/wire/sharded_index.h"

namespace fs::checkpoint {

using protocol::kShardedFormatName;
using protocol::kShardedIndexFile;
using protocol::kShardedIndexVersion;
using protocol::shardedRankFileName;  // "rank-<shard>.pt"

using ShardedMember = protocol::ShardedMember;
using ShardedFlat = protocol::ShardedFlat;
using ShardedUnit = protocol::ShardedUnit;

struct ShardedIndex {
  int64_t version = kShardedIndexVersion;
  int64_t worldSize = 1;
  std::string strategy;
  int64_t shardGroupSize = 1;
  std::vector<std::string> files;
  std::vector<ShardedUnit> units;
  std::vector<std::string> parameterOrder;
  std::vector<std::string> buffers;
  std::vector<step::AdamWGroupStateDict> paramGroups;  // with params and paramNames
  step::LrSchedulerStateDict scheduler;
  int64_t epoch = 0;
  ResumeState resume;
};

std::string encodeShardedIndex(const ShardedIndex& index);
// `where` names the file in errors.
protocol::StatusOr<ShardedIndex> decodeShardedIndex(const std::string& text,
                                                    const std::filesystem::path& where);
// Reads and decodes `dir`/index.json; NotFound naming it when absent.
protocol::StatusOr<ShardedIndex> readShardedIndex(const std::filesystem::path& dir);

// The index's dtype spelling (c10::toString) back to the type, through tensorfile's one
// table of dtype names (tensorfile/dtype.h c10Name).
protocol::StatusOr<c10::ScalarType> dtypeFromName(const std::string& name);

}  // namespace fs::checkpoint
