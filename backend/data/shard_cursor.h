// Where a shard pipeline worker's reader stood when it completed a batch:
// the shard it was reading, how far into it, and in which pass. Carried on
// each delivered Batch (batch.h) and, for the last batch a source consumed
// of each dataset, in the DataPosition a step checkpoint stores
// (data_position.h), so a checkpoint can say "laion at shard
// laion-000012.tar, 340 samples read from it".
//
// NOTE [Shard cursor]: samples reach a batch through a shuffle buffer, so a
// batch's samples may come from several shards read earlier; the cursor is
// deliberately not "where the batch's samples came from" but the reader's
// position at the moment the batch's last row was committed:
//   shard        the shard the worker had open (or, while the shuffle buffer
//                drains at the end of a pass, the last shard it opened), as
//                the plan gives it (path or URL, "pipe:..." included);
//   shardIndex   its index in the dataset's expanded shard list (the order of
//                the config's brace patterns), out of shardCount;
//   samplesRead  samples the tar reader had yielded from it (a sample is the
//                members sharing a key; counted whether or not the preparer
//                later accepted it; members the reader itself dropped are not
//                samples);
//   pass         the pass over the worker's shards within the epoch (NOTE
//                [Shard order] in shard_plan.h);
//   worker       the data worker (of the dataset, on this rank) that read it:
//                with several workers each reads its own shards, and batch i
//                of the epoch comes from worker i mod workers.
// A cursor is derived from (seed, epoch, rank, world, workers, shards,
// batches consumed) like the batches themselves, so resuming replays it.
//
// Thread-safety: plain value.
#pragma once

#include "backend/protocol/wire/checkpoint_record.h"

namespace fs::data {

// Declared once with the checkpoint's records (NOTE [Checkpoint records]).
using ShardCursor = protocol::ShardCursorRecord;

}  // namespace fs::data
