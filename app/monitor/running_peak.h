// RunningPeak: the largest value of a series that grows at its end and is
// sometimes cut back (a rewind after a resume, NOTE [Rewinds] in series_store.cpp),
// without keeping the series.
//
// It keeps only the points where the running maximum rose ("records"), each
// with its index. The maximum of the first n points is the last record below
// index n, so cutting the series to n points drops the records at n or later
// and nothing needs to be read again. add() is O(1); truncate() is O(records
// dropped). A series of equal or falling values keeps one record; a steadily
// rising one keeps one per point, the bound being the series itself.
//
// Thread-safety: a plain value; one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace fs::app {

class RunningPeak {
 public:
  // Point `index` of the series has `value`. REQUIRES: index is above every
  // index added since the last truncate() below it (points come in order).
  void add(std::size_t index, std::int64_t value) {
    if (records_.empty() || value > records_.back().value) records_.push_back({index, value});
  }
  // The series now has its first `size` points only.
  void truncate(std::size_t size) {
    while (!records_.empty() && records_.back().index >= size) records_.pop_back();
  }
  void clear() { records_.clear(); }
  // The largest value added and not truncated; none when there is none.
  std::optional<std::int64_t> peak() const {
    return records_.empty() ? std::nullopt : std::optional<std::int64_t>(records_.back().value);
  }

 private:
  struct Record {
    std::size_t index;
    std::int64_t value;
  };
  std::vector<Record> records_;
};

}  // namespace fs::app
