// MinMaxPyramid: per-block min / max of a growing array, for level-of-detail drawing.
//
// See NOTE [Level of detail] in minmax_pyramid.cpp.
//
// Thread-safety: none; one owner (a curve on the GUI thread, or a test).
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <vector>

namespace fs::ui {

// Summary of the finite values of a range; empty() when it holds none.
struct YRange {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double min_positive = std::numeric_limits<double>::infinity();  // smallest value > 0

  bool empty() const { return !(min <= max); }
  bool hasPositive() const { return min_positive < std::numeric_limits<double>::infinity(); }
  void add(double v);
  void merge(const YRange& other);
  bool operator==(const YRange&) const = default;
};

// Whether a value is drawn: finite, and positive on a log axis.
inline bool isDrawable(double v, bool positive_only) {
  return positive_only ? (v > 0 && v < std::numeric_limits<double>::infinity())
                       : (v - v == 0);  // false for NaN and +-inf
}

class MinMaxPyramid {
 public:
  static constexpr int kLeafShift = 6;
  static constexpr std::size_t kLeafPoints = std::size_t{1} << kLeafShift;
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

  // Forgets everything (the array was replaced).
  void clear();
  // Takes in y[size(), y.size()). REQUIRES: y.size() >= size() and the first
  // size() values are the ones seen before.
  void update(std::span<const double> y);
  // Points taken in so far.
  std::size_t size() const { return size_; }

  // The finite values of y[begin, end). REQUIRES: begin <= end <= size().
  YRange range(std::span<const double> y, std::size_t begin, std::size_t end) const;
  // The last / first index in [begin, end) whose value isDrawable(), or npos.
  std::size_t lastDrawable(std::span<const double> y, std::size_t begin, std::size_t end,
                           bool positive_only) const;
  std::size_t firstDrawable(std::span<const double> y, std::size_t begin, std::size_t end,
                            bool positive_only) const;

  // levels()[L][b]: block b of level L (kLeafPoints << L points). For tests.
  const std::vector<std::vector<YRange>>& levels() const { return levels_; }

 private:
  // Appends a complete block at `level` and carries pairs upward.
  void push(std::size_t level, const YRange& block);
  // Whether block b of level L holds a drawable value.
  bool blockDrawable(std::size_t level, std::size_t b, bool positive_only) const;
  // The last / first drawable index inside block b of level L, which has one.
  std::size_t descendLast(std::span<const double> y, std::size_t level, std::size_t b,
                          bool positive_only) const;
  std::size_t descendFirst(std::span<const double> y, std::size_t level, std::size_t b,
                           bool positive_only) const;

  std::size_t size_ = 0;
  std::vector<std::vector<YRange>> levels_;
};

}  // namespace fs::ui
