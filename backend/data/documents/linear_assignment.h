// Rectangular linear sum assignment, answer for answer as SciPy's
// `scipy.optimize.linear_sum_assignment` (1.10, the MMC4 reference's era).
//
// MMC4 matches images to sentences with it, and when several assignments
// have the same total the one SciPy picks decides which sentence an image
// lands on; so ties must break exactly as SciPy's shortest-augmenting-path
// solver breaks them. See NOTE [SciPy tie-breaking] in the .cpp.
//
// Thread-safety: a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::data {

struct AssignedPair {
  int64_t row = 0;
  int64_t col = 0;
  bool operator==(const AssignedPair&) const = default;
};

// Minimises (or, with `maximize`, maximises) the total of cost[row][col] over
// min(rows, cols) pairs using each row and column at most once. `cost` is
// row-major, rows x cols. Pairs come back with rows ascending.
// A matrix with no rows or no columns has the empty assignment (as SciPy).
// Errors (InvalidArgument): cost.size() != rows * cols; a NaN or -inf entry
// (+inf when maximising), which SciPy calls "invalid numeric entries"; and
// no complete assignment of finite cost ("infeasible", +inf entries only).
protocol::StatusOr<std::vector<AssignedPair>> linearSumAssignment(std::span<const double> cost, size_t rows,
                                                                  size_t cols, bool maximize = false);

}  // namespace fs::data
