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

namespace fs::inspect::detail {

// Corruption "<checkpoint path>: <entry>: <what>".
Status bad(const CheckpointIndex& c, const std::string& entry, const std::string& what);
// The L2 norm of the optimizer-section tensor `entry` (and its shape); nullopt when absent.
StatusOr<std::optional<double>> norm(const CheckpointIndex& c, const std::string& entry,
                                     std::vector<std::int64_t>* shape);
// Its size and XXH64.
RngGenerator generator(std::string name, std::span<const std::byte> bytes);
// Our process generator's four words, little-endian.
RngGenerator ownGenerator(const std::vector<std::uint64_t>& words);
// A data position's JSON text (backend/data/data_position.cpp's encoding).
StatusOr<DataPositionInfo> parsePosition(const CheckpointIndex& c, const std::string& entry,
                                         const std::string& text);
// Our sharded directory: index.json's groups, scheduler and resume record.
Status readSharded(const CheckpointIndex& c, TrainingState& out);

}  // namespace fs::inspect::detail
