// The parts of readTrainingState (training_state.cpp) that the sharded
// reader (training_state_sharded.cpp) shares. Internal to backend/inspect.
//
// Thread-safety: pure functions over a const CheckpointIndex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/inspect/training_state.h"
#include "backend/protocol/wire/sharded_index.h"

namespace fs::inspect::detail {

// Corruption "<checkpoint path>: <entry>: <what>".
Status bad(const CheckpointIndex& c, const std::string& entry, const std::string& what);
// The L2 norm of the optimizer-section tensor `entry` (and its shape); nullopt when absent.
StatusOr<std::optional<double>> norm(const CheckpointIndex& c, const std::string& entry,
                                     std::vector<std::int64_t>* shape);
// The resume record in words, whichever file carried it.
ResumeInfo describeResume(const protocol::ResumeRecord& record);
// Our sharded directory's index.json, decoded (errors name the file).
StatusOr<protocol::ShardedIndexRecord> readShardedIndexRecord(const CheckpointIndex& c);
// Our sharded directory: index.json's groups, scheduler and resume record.
Status readSharded(const CheckpointIndex& c, TrainingState& out);

}  // namespace fs::inspect::detail
