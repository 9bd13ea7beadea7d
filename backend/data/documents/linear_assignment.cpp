#include "backend/data/documents/linear_assignment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace fs::data {
namespace {

using protocol::Status;
constexpr double kInf = std::numeric_limits<double>::infinity();

// NOTE [SciPy tie-breaking]
// SciPy solves with Crouse's (2016) shortest augmenting path method: rows are
// added one at a time, and each one grows a Dijkstra-like tree over reduced
// costs until it reaches a free column. Among equal-cost optima the answer
// depends on details that carry no meaning but must be reproduced:
//  - the columns still to scan start in descending order (so an all-equal
//    matrix gives the identity) and a scanned column is removed by moving the
//    last candidate into its slot, which reorders the rest;
//  - a column's tentative distance only improves on a strict "<";
//  - on equal distance the scan prefers a column that is still free (it ends
//    the search at once), otherwise the first one seen keeps the lead;
//  - reduced costs are formed as ((offset + c) - u) - v in double, the cost
//    matrix is used as given (SciPy >= 1.6 no longer subtracts its minimum;
//    1.4-1.5 did, which can move ties through rounding);
//  - a matrix with more rows than columns is solved transposed, and the pairs
//    are then sorted by the original row.
// The tests compare pair for pair with SciPy on tie-heavy integer matrices.

// State of the solver on a "wide" matrix: n rows <= m columns.
class Solver {
 public:
  Solver(const std::vector<double>& c, size_t n, size_t m)
      : c_(c),
        n_(n),
        m_(m),
        u_(n, 0.0),
        v_(m, 0.0),
        dist_(m),
        pred_(m, -1),
        colOf_(n, -1),
        rowOf_(m, -1),
        rowSeen_(n),
        colSeen_(m),
        open_(m) {}

  // False when some row cannot reach a free column at finite cost.
  bool run() {
    for (size_t start = 0; start < n_; ++start) {
      double offset = 0;
      const int64_t sink = shortestPath(start, &offset);
      if (sink < 0) return false;
      updateDuals(start, offset);
      augment(start, sink);
    }
    return true;
  }
  const std::vector<int64_t>& colOf() const { return colOf_; }

 private:
  int64_t shortestPath(size_t start, double* offsetOut) {
    size_t open = m_;
    for (size_t k = 0; k < m_; ++k) open_[k] = static_cast<int64_t>(m_ - 1 - k);
    std::fill(rowSeen_.begin(), rowSeen_.end(), 0);
    std::fill(colSeen_.begin(), colSeen_.end(), 0);
    std::fill(dist_.begin(), dist_.end(), kInf);
    double offset = 0;
    auto row = static_cast<int64_t>(start);
    while (true) {
      rowSeen_[row] = 1;
      double best = kInf;
      size_t bestSlot = open;  // none yet
      for (size_t k = 0; k < open; ++k) {
        const int64_t j = open_[k];
        const double reduced = offset + c_[row * m_ + j] - u_[row] - v_[j];
        if (reduced < dist_[j]) {
          dist_[j] = reduced;
          pred_[j] = row;
        }
        if (dist_[j] < best || (dist_[j] == best && rowOf_[j] == -1)) {
          best = dist_[j];
          bestSlot = k;
        }
      }
      offset = best;
      if (offset == kInf || bestSlot == open) return -1;
      const int64_t j = open_[bestSlot];
      colSeen_[j] = 1;
      open_[bestSlot] = open_[--open];
      if (rowOf_[j] == -1) {
        *offsetOut = offset;
        return j;
      }
      row = rowOf_[j];
    }
  }

  void updateDuals(size_t start, double offset) {
    u_[start] += offset;
    for (size_t i = 0; i < n_; ++i)
      if (rowSeen_[i] && i != start) u_[i] += offset - dist_[colOf_[i]];
    for (size_t j = 0; j < m_; ++j)
      if (colSeen_[j]) v_[j] -= offset - dist_[j];
  }

  // Flip the alternating path from the sink back to the start row.
  void augment(size_t start, int64_t sink) {
    int64_t j = sink;
    while (true) {
      const int64_t i = pred_[j];
      rowOf_[j] = i;
      std::swap(colOf_[i], j);
      if (i == static_cast<int64_t>(start)) break;
    }
  }

  const std::vector<double>& c_;
  size_t n_, m_;
  std::vector<double> u_, v_, dist_;
  std::vector<int64_t> pred_, colOf_, rowOf_;
  std::vector<char> rowSeen_, colSeen_;
  std::vector<int64_t> open_;
};

}  // namespace

protocol::StatusOr<std::vector<AssignedPair>> linearSumAssignment(std::span<const double> cost, size_t rows,
                                                                  size_t cols, bool maximize) {
  if (cost.size() != rows * cols)
    return Status::invalidArgument("linear sum assignment: cost has " + std::to_string(cost.size()) +
                                   " entries, expected rows x cols = " + std::to_string(rows) + " x " +
                                   std::to_string(cols));
  if (rows == 0 || cols == 0) return std::vector<AssignedPair>{};

  const bool transposed = cols < rows;
  const size_t n = transposed ? cols : rows;
  const size_t m = transposed ? rows : cols;
  std::vector<double> c(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t k = 0; k < cols; ++k) {
      const double x = maximize ? -cost[r * cols + k] : cost[r * cols + k];
      if (std::isnan(x) || x == -kInf)
        return Status::invalidArgument("linear sum assignment: matrix contains invalid numeric entries (" +
                                       std::to_string(cost[r * cols + k]) + " at row " + std::to_string(r) +
                                       ", column " + std::to_string(k) + ")");
      c[transposed ? k * m + r : r * m + k] = x;
    }
  }

  Solver solver(c, n, m);
  if (!solver.run())
    return Status::invalidArgument("linear sum assignment: cost matrix is infeasible (" +
                                   std::to_string(rows) + " x " + std::to_string(cols) +
                                   ", no complete assignment of finite cost)");

  std::vector<AssignedPair> pairs(n);
  const auto& colOf = solver.colOf();
  for (size_t i = 0; i < n; ++i)
    pairs[i] = transposed ? AssignedPair{colOf[i], static_cast<int64_t>(i)}
                          : AssignedPair{static_cast<int64_t>(i), colOf[i]};
  if (transposed)
    std::sort(pairs.begin(), pairs.end(),
              [](const AssignedPair& a, const AssignedPair& b) { return a.row < b.row; });
  return pairs;
}

}  // namespace fs::data
