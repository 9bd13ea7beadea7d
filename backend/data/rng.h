// Small, portable random numbers for data generation and our own seeding.
//
// The standard library's distributions are implementation-defined, so the
// same seed could give different data under another libstdc++; these are
// fully specified here: SplitMix64 to derive keys and seed, xoshiro256** to
// draw, Lemire's method for bounded integers.
//
// Thread-safety: an Rng is a plain value; do not share one between threads.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>

namespace fs::data {

inline uint64_t splitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// One 64-bit key from several integers (order matters).
inline uint64_t mixKey(std::initializer_list<uint64_t> parts) {
  uint64_t state = 0x6A09E667F3BCC909ULL;
  uint64_t key = 0;
  for (uint64_t p : parts) {
    state ^= p + 0x9E3779B97F4A7C15ULL + (key << 6) + (key >> 2);
    key = splitMix64(state);
  }
  return key;
}

class Rng {
  __extension__ typedef unsigned __int128 U128;

 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  void reseed(uint64_t seed) {
    uint64_t s = seed;
    for (auto& w : s_) w = splitMix64(s);
  }

  uint64_t nextU64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n). REQUIRES: n > 0.
  uint64_t below(uint64_t n) {
    U128 m = static_cast<U128>(nextU64()) * n;
    auto low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<U128>(nextU64()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // Uniform in [lo, hi]; lo when hi < lo.
  int64_t range(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
  }

  // Uniform in [0, 1) with 24 bits (exact in float32).
  float unitFloat() { return static_cast<float>(nextU64() >> 40) * (1.0f / 16777216.0f); }

  bool coin(double p) { return static_cast<double>(nextU64() >> 11) * (1.0 / 9007199254740992.0) < p; }

  std::array<uint64_t, 4> state() const { return s_; }
  void setState(const std::array<uint64_t, 4>& s) { s_ = s; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> s_{};
};

}  // namespace fs::data
