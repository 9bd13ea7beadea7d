// Where a data stream stands, so a resumed run continues with exactly the
// batches an uninterrupted run would have seen.
//
// NOTE [Data position]: a position is (epoch, batches consumed per dataset)
// plus whatever random state the source carries beyond that (`rngState`,
// opaque bytes owned by the source kind). The synthetic source is a pure
// function of (seed, epoch, rank, dataset, batch index), so its rngState is
// empty; the shard pipeline will store its shuffle buffers' seeds there.
// Rank and world are recorded because a position is per rank: a source
// refuses one from another rank or world size. Ranks consume in lockstep,
// so the trainer hands rank 0's position to every rank, and across world
// sizes it carries the position over by samples, using `batchSizes` (the
// per-rank batch size of each dataset when it was saved; empty in files
// written before it existed).
//
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::data {

struct DataPosition {
  static constexpr int kFormatVersion = 1;

  std::string source;  // "synthetic" | "shards": the kind that wrote it
  int64_t epoch = 0;
  int64_t rank = 0;
  int64_t world = 1;
  std::vector<std::string> datasets;     // names, config order
  std::vector<int64_t> batchesConsumed;  // per dataset, within `epoch`
  std::vector<int64_t> batchSizes;       // per dataset, per rank; may be empty (older files)
  std::vector<uint8_t> rngState;         // source-specific, may be empty

  bool operator==(const DataPosition&) const = default;
};

// Why `saved` cannot resume a source that stands at `mine` (another source
// kind, rank, world size or dataset list, a negative epoch, or more batches
// consumed than an epoch of `stepsPerEpoch` has); ok when it can.
protocol::Status checkResumable(const DataPosition& mine, const DataPosition& saved, int64_t stepsPerEpoch);

// A compact JSON object (rngState as hex), for step checkpoints.
std::string encodeDataPosition(const DataPosition& position);
// Rejects malformed JSON, missing fields and a newer format version.
protocol::StatusOr<DataPosition> decodeDataPosition(const std::string& json);

}  // namespace fs::data
