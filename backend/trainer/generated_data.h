// data.source = "generated": the demo's data without user files. Real LAION
// and MMC4 shards of generated pictures and their BPE tokenizer are written
// into the run directory (shardgen/synthetic_shards.h) and then read by the
// ordinary shard pipeline, so the demo exercises tar reading, JPEG decode,
// CLIP preprocessing, tokenisation and the MMC4 rules like a real run.
//
// Each rank writes its own copy (<run>/generated-data/rank<r>): the content is
// a pure function of the config, so the copies are identical, and no rank
// waits for another. A copy already complete (a resumed run) is reused.
//
// Thread-safety: one call per rank.
#pragma once

#include <filesystem>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"

namespace fs::engine {

// Writes (or finds) the shards and returns `config` pointed at them:
// data.source "shards", every dataset's shards pattern and
// model.lm.tokenizer_path (family opt) filled in.
protocol::StatusOr<protocol::RunConfig> prepareGeneratedData(const protocol::RunConfig& config,
                                                             const std::filesystem::path& runDir,
                                                             int64_t rank, int64_t world);

}  // namespace fs::engine
