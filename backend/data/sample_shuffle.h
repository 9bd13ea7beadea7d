// The sample shuffle buffer of a data worker, WebDataset's algorithm with our
// seeded generator: samples enter the buffer; once it holds `initial` of
// them, every new sample lets one random sample out; at the end of the
// stream the rest leave in random order. Memory is bounded by `capacity`
// samples (the reference's 5000 raw samples: for MMC4 documents with inline
// images that is gigabytes per worker, so data.shuffle_buffer is a knob).
//
// The reference seeds this from pid and time; ours comes from (seed, epoch,
// rank, worker), so a run's sample order is reproducible (spec section 8).
//
// Thread-safety: one owner.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "backend/data/rng.h"

namespace fs::data {

template <typename T>
class SampleShuffle {
 public:
  // REQUIRES: capacity >= 1. `initial` is clamped to [1, capacity].
  SampleShuffle(size_t capacity, size_t initial, uint64_t seed)
      : capacity_(std::max<size_t>(1, capacity)),
        initial_(std::clamp<size_t>(initial, 1, capacity_)),
        rng_(seed) {
    buffer_.reserve(std::min<size_t>(capacity_, 1 << 16));
  }

  // Adds a sample; returns one that leaves the buffer, if any. Below
  // `initial` nothing leaves; between `initial` and `capacity` one sample
  // leaves for every two that arrive (the buffer grows as WebDataset's does,
  // which reads two samples per output while below capacity); at capacity
  // one leaves for each that arrives.
  std::optional<T> push(T sample) {
    buffer_.push_back(std::move(sample));
    if (buffer_.size() < initial_) return std::nullopt;
    if (buffer_.size() < capacity_) {
      growSkip_ = !growSkip_;
      if (growSkip_) return std::nullopt;
    }
    return pick();
  }

  // Drains at the end of the stream: nullopt once empty.
  std::optional<T> drain() {
    if (buffer_.empty()) return std::nullopt;
    return pick();
  }

  size_t size() const { return buffer_.size(); }

 private:
  T pick() {
    const size_t i = rng_.below(buffer_.size());
    std::swap(buffer_[i], buffer_.back());
    T out = std::move(buffer_.back());
    buffer_.pop_back();
    return out;
  }

  size_t capacity_;
  size_t initial_;
  bool growSkip_ = false;
  Rng rng_;
  std::vector<T> buffer_;
};

}  // namespace fs::data
