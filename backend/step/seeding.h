// Seeds and random state of a training process.
//
// NOTE [Seeding]: as the reference: everything is seeded with `seed` before
// the model is built (so every rank initialises identical weights), then with
// `seed + rank` (dropout and anything else random differ per rank). "Every
// thing" is LibTorch's default CPU generator, the CUDA generators when CUDA
// is present (at::manual_seed covers both), and our own process Rng
// (trainRng()). Data order does not depend on these: sources seed themselves
// from (seed, epoch, rank, ...).
//
// Thread-safety: call from the rank's main thread; trainRng() is not
// synchronised.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "backend/data/rng.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"

namespace fs::step {

void seedEverything(uint64_t seed);
inline void seedForModelInit(const protocol::RunConfig& c) {
  seedEverything(static_cast<uint64_t>(c.seed));
}
inline void seedForRank(const protocol::RunConfig& c, int64_t rank) {
  seedEverything(static_cast<uint64_t>(c.seed + rank));
}

// Our process-wide generator (seeded by seedEverything).
data::Rng& trainRng();

// Every generator's state, for step checkpoints. torchCpu is the byte layout
// of Python's torch.get_rng_state() (and torch.cuda.get_rng_state() per
// device), so it can be restored from Python too.
struct RngSnapshot {
  std::vector<uint8_t> torchCpu;
  std::vector<std::vector<uint8_t>> torchCuda;  // one per device; empty without CUDA
  std::array<uint64_t, 4> own{};
};

RngSnapshot captureRng();
// Refuses a snapshot with a different CUDA device count or malformed state.
protocol::Status restoreRng(const RngSnapshot& snapshot);

}  // namespace fs::step
