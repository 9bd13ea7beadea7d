#include "ui/plots/minmax_pyramid.h"

#include <algorithm>
#include <utility>

// NOTE [Level of detail]
// Peers cap what they draw (TensorBoard keeps 1,000 points per tag, W&B draws
// ~1,500 buckets), so a one-step spike disappears. We draw every point: for
// each pixel column the last value as the line and the min / max of every
// point in the column as a band (column_buckets.h). Scanning 10M points per
// zoom is too slow for a 60 Hz redraw, so this pyramid keeps the min / max of
// aligned blocks: level 0 holds blocks of kLeafPoints points, level L blocks
// of kLeafPoints << L. Any index range splits into at most two partial leaf
// blocks (scanned point by point) and O(log n) whole blocks, so one column
// costs O(kLeafPoints + log n) whatever its width. Appending updates only
// the blocks the new points complete (amortised O(1) per point); the
// incomplete tail is never stored, it is scanned.
//
// Only finite values count: NaN and +-inf are gaps. Each block also keeps
// its smallest positive value so a log axis (which skips values <= 0) needs
// no second pyramid.
//
// The pyramid does not own the values: every call takes the array, which
// must be the same append-only array the pyramid was built from (see NOTE
// [Curve data contract] in curve_source.h).

namespace fs::ui {

void YRange::add(double v) {
  if (!(v - v == 0)) return;  // NaN, +-inf: a gap
  if (v < min) min = v;
  if (v > max) max = v;
  if (v > 0 && v < min_positive) min_positive = v;
}

void YRange::merge(const YRange& other) {
  min = std::min(min, other.min);
  max = std::max(max, other.max);
  min_positive = std::min(min_positive, other.min_positive);
}

void MinMaxPyramid::clear() {
  size_ = 0;
  levels_.clear();
}

void MinMaxPyramid::update(std::span<const double> y) {
  const std::size_t complete = y.size() / kLeafPoints;
  for (std::size_t b = size_ / kLeafPoints; b < complete; ++b) {
    YRange block;
    for (std::size_t i = b * kLeafPoints; i < (b + 1) * kLeafPoints; ++i) block.add(y[i]);
    push(0, block);
  }
  size_ = std::max(size_, y.size());
}

void MinMaxPyramid::push(std::size_t level, const YRange& block) {
  if (levels_.size() <= level) levels_.emplace_back();
  auto& blocks = levels_[level];
  blocks.push_back(block);
  if (blocks.size() % 2 == 0) {
    YRange pair = blocks[blocks.size() - 2];
    pair.merge(blocks.back());
    push(level + 1, pair);  // depth is log2(n / kLeafPoints): never deep
  }
}

namespace {

// Splits whole leaf blocks [a, b) into aligned blocks of every level, calling
// visit(level, block) for each; left-side blocks go to `left` (in increasing
// position), right-side ones to `right` (in decreasing position). Both lists
// together cover [a, b) exactly once.
template <class Left, class Right>
void decompose(std::size_t a, std::size_t b, Left&& left, Right&& right) {
  for (std::size_t level = 0; a < b; ++level, a >>= 1, b >>= 1) {
    if (a & 1) left(level, a++);
    if (b & 1) right(level, --b);
  }
}

// Blocks of one side of a decomposition, at most two per level.
struct BlockList {
  std::pair<std::size_t, std::size_t> items[2 * 64];
  std::size_t count = 0;
  void add(std::size_t level, std::size_t b) { items[count++] = {level, b}; }
};

}  // namespace

YRange MinMaxPyramid::range(std::span<const double> y, std::size_t begin, std::size_t end) const {
  YRange out;
  if (begin >= end) return out;
  const std::size_t first_block = (begin + kLeafPoints - 1) / kLeafPoints;
  const std::size_t end_block = std::min(end / kLeafPoints, size_ / kLeafPoints);
  if (first_block >= end_block) {
    for (std::size_t i = begin; i < end; ++i) out.add(y[i]);
    return out;
  }
  for (std::size_t i = begin; i < first_block * kLeafPoints; ++i) out.add(y[i]);
  for (std::size_t i = end_block * kLeafPoints; i < end; ++i) out.add(y[i]);
  auto take = [&](std::size_t level, std::size_t b) { out.merge(levels_[level][b]); };
  decompose(first_block, end_block, take, take);
  return out;
}

bool MinMaxPyramid::blockDrawable(std::size_t level, std::size_t b, bool positive_only) const {
  const YRange& r = levels_[level][b];
  return positive_only ? r.hasPositive() : !r.empty();
}

std::size_t MinMaxPyramid::descendLast(std::span<const double> y, std::size_t level, std::size_t b,
                                       bool positive_only) const {
  for (; level > 0; --level) b = blockDrawable(level - 1, 2 * b + 1, positive_only) ? 2 * b + 1 : 2 * b;
  for (std::size_t i = (b + 1) * kLeafPoints; i-- > b * kLeafPoints;)
    if (isDrawable(y[i], positive_only)) return i;
  return npos;  // unreachable while the pyramid matches y
}

std::size_t MinMaxPyramid::descendFirst(std::span<const double> y, std::size_t level, std::size_t b,
                                        bool positive_only) const {
  for (; level > 0; --level) b = blockDrawable(level - 1, 2 * b, positive_only) ? 2 * b : 2 * b + 1;
  for (std::size_t i = b * kLeafPoints; i < (b + 1) * kLeafPoints; ++i)
    if (isDrawable(y[i], positive_only)) return i;
  return npos;
}

std::size_t MinMaxPyramid::lastDrawable(std::span<const double> y, std::size_t begin, std::size_t end,
                                        bool positive_only) const {
  if (begin >= end) return npos;
  const std::size_t first_block = (begin + kLeafPoints - 1) / kLeafPoints;
  const std::size_t end_block = std::min(end / kLeafPoints, size_ / kLeafPoints);
  const std::size_t whole_end = first_block < end_block ? end_block * kLeafPoints : begin;
  for (std::size_t i = end; i-- > whole_end;)
    if (isDrawable(y[i], positive_only)) return i;
  if (first_block >= end_block) return npos;

  // Right-side blocks arrive right to left; left-side ones left to right.
  std::pair<std::size_t, std::size_t> found{npos, npos};
  BlockList left_side;
  auto on_left = [&](std::size_t level, std::size_t b) { left_side.add(level, b); };
  auto on_right = [&](std::size_t level, std::size_t b) {
    if (found.first == npos && blockDrawable(level, b, positive_only)) found = {level, b};
  };
  decompose(first_block, end_block, on_left, on_right);
  if (found.first == npos) {
    for (std::size_t k = left_side.count; k-- > 0;)
      if (blockDrawable(left_side.items[k].first, left_side.items[k].second, positive_only)) {
        found = left_side.items[k];
        break;
      }
  }
  if (found.first != npos) return descendLast(y, found.first, found.second, positive_only);
  for (std::size_t i = first_block * kLeafPoints; i-- > begin;)
    if (isDrawable(y[i], positive_only)) return i;
  return npos;
}

std::size_t MinMaxPyramid::firstDrawable(std::span<const double> y, std::size_t begin, std::size_t end,
                                         bool positive_only) const {
  if (begin >= end) return npos;
  const std::size_t first_block = (begin + kLeafPoints - 1) / kLeafPoints;
  const std::size_t end_block = std::min(end / kLeafPoints, size_ / kLeafPoints);
  const std::size_t head_end = first_block < end_block ? first_block * kLeafPoints : end;
  for (std::size_t i = begin; i < head_end; ++i)
    if (isDrawable(y[i], positive_only)) return i;
  if (first_block >= end_block) return npos;

  std::pair<std::size_t, std::size_t> found{npos, npos};
  BlockList right_side;
  auto on_left = [&](std::size_t level, std::size_t b) {
    if (found.first == npos && blockDrawable(level, b, positive_only)) found = {level, b};
  };
  auto on_right = [&](std::size_t level, std::size_t b) { right_side.add(level, b); };
  decompose(first_block, end_block, on_left, on_right);
  if (found.first == npos) {
    for (std::size_t k = right_side.count; k-- > 0;)
      if (blockDrawable(right_side.items[k].first, right_side.items[k].second, positive_only)) {
        found = right_side.items[k];
        break;
      }
  }
  if (found.first != npos) return descendFirst(y, found.first, found.second, positive_only);
  for (std::size_t i = end_block * kLeafPoints; i < end; ++i)
    if (isDrawable(y[i], positive_only)) return i;
  return npos;
}

}  // namespace fs::ui
