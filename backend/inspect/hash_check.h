// Checking tensors against the content hashes our checkpoint manifest records
// (TensorEntry::manifestHash: XXH64 of the elements in row-major order, as the
// engine's tensorDigest computes it).
//
// Thread-safety: reentrant; reads the mapped files (call it on a worker thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/inspect/checkpoint_index.h"

namespace fs::inspect {

enum class HashState { kNotRecorded, kMatches, kDiffers };
std::string_view hashStateName(HashState state);

// tensors()[i] against its manifest hash. Errors: the tensor's bytes cannot be read.
StatusOr<HashState> checkManifestHash(const CheckpointIndex& index, std::size_t i);

struct HashReport {
  std::vector<HashState> states;  // per tensor, as tensors()
  std::uint64_t matching = 0, differing = 0, notRecorded = 0;
  std::vector<std::string> differ;  // names of the tensors whose bytes differ from their hash
  bool cancelled = false;           // stopped early: states covers the tensors looked at
};

struct HashCheckOptions {
  // Bytes hashed so far and the bytes of every tensor that has a hash; after each tensor.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
  const std::atomic<bool>* cancel = nullptr;  // polled between tensors: HashReport::cancelled
};

// Every tensor of `index` with a recorded hash.
StatusOr<HashReport> checkManifestHashes(const CheckpointIndex& index, const HashCheckOptions& options = {});

}  // namespace fs::inspect
