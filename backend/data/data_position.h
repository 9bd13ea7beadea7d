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
// NOTE [Data position cursors]: the shard source also records, per dataset,
// the cursor of the last batch it consumed in this epoch (`cursors`; NOTE
// [Shard cursor] in shard_cursor.h), so a checkpoint can name the shard and
// the sample it stands at. It is description, not resume state: the cursor
// follows from the rest of the position, restore() replays it, and
// checkResumable() ignores it. It is empty for the synthetic source, at the
// start of an epoch (nothing consumed yet), in files written before it
// existed, and after a position was carried over to another rank (whose
// reader reads other shards) or world size (the shards are re-split), until
// the next batch brings the rank's own. The JSON key is written only when present and
// the format stays 1: decodeDataPosition() reads the keys it knows and
// ignores any others, as do older builds, which therefore read these files.
//
// The record, its JSON codec (protocol::encodeDataPosition /
// decodeDataPosition) and its field list live with the checkpoint's other
// records (backend/protocol/wire/checkpoint_record.h); this header adds what
// a data source checks before it resumes from one.
//
// Thread-safety: plain value.
#pragma once

#include <cstdint>

#include "backend/data/shard_cursor.h"
#include "backend/protocol/status.h"
#include "backend/protocol/wire/checkpoint_record.h"

namespace fs::data {

using DataPosition = protocol::DataPositionRecord;
using protocol::decodeDataPosition;
using protocol::encodeDataPosition;

// Why `saved` cannot resume a source that stands at `mine` (another source
// kind, rank, world size or dataset list, a negative epoch, or more batches
// consumed than an epoch of `stepsPerEpoch` has); ok when it can.
protocol::Status checkResumable(const DataPosition& mine, const DataPosition& saved, int64_t stepsPerEpoch);

}  // namespace fs::data
