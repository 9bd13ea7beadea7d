// XXH64 (seed 0) of a byte range: the content hash checkpoint manifests record
// for each tensor, computable without LibTorch (the checkpoint inspector
// verifies files with it) at memory speed. Not a cryptographic hash: it
// detects damage, not tampering.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace fs::tensorfile {

std::uint64_t xxh64(std::span<const std::byte> bytes, std::uint64_t seed = 0);

// "xxh64:" and 16 lower-case hex digits.
std::string contentHashText(std::uint64_t hash);

}  // namespace fs::tensorfile
