// Diffing two checkpoints tensor by tensor: what a run actually changed.
//
// Tensors are matched by section and name. For each pair of the same shape:
// the largest absolute change, the relative change ||b - a|| / ||a||, the
// cosine similarity and the elements that changed; for a 2-D tensor also the
// rows that changed (an embedding: OpenFlamingo trains only the <image> and
// <|endofchunk|> rows). Tensors in one checkpoint only are added or removed;
// same name, other shape is mis-shaped. Values are compared as doubles
// (bf16 / fp16 converted exactly), NaN == NaN counting as unchanged.
//
// Thread-safety: reentrant; reads the mapped files (call it on a worker thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/inspect/checkpoint_index.h"

namespace fs::inspect {

enum class DiffKind { kUnchanged, kChanged, kAdded, kRemoved, kMisShaped };
std::string_view diffKindName(DiffKind kind);

struct TensorDiff {
  std::string name;
  Section section = Section::kModel;
  DiffKind kind = DiffKind::kUnchanged;
  std::vector<std::int64_t> shapeA, shapeB;  // empty for the side that lacks it
  tensorfile::DType dtypeA = tensorfile::DType::kFloat32, dtypeB = tensorfile::DType::kFloat32;
  // For pairs of one shape:
  double maxAbsChange = 0;
  double relativeChange = 0;  // ||b - a|| / ||a||; +inf when a is all zeros and b is not
  double cosine = 1;          // a.b / (|a| |b|); 1 when both are all zeros
  std::int64_t changedElements = 0;
  std::int64_t rows = 0;                  // 2-D tensors: the first dimension; else 0
  std::vector<std::int64_t> changedRows;  // 2-D: rows with a changed element (at most kMaxRowsListed)
  std::int64_t changedRowCount = 0;       // all of them
};

inline constexpr std::size_t kMaxRowsListed = 4096;

struct DiffOptions {
  std::vector<Section> sections = {Section::kModel};  // the sections compared
  // Bytes of both sides compared so far, of the total; after each tensor.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
  const std::atomic<bool>* cancel = nullptr;  // polled between tensors: Status cancelled
};

struct DiffReport {
  // Changed first, by relative change (largest first); then mis-shaped, added,
  // removed and unchanged, each by name.
  std::vector<TensorDiff> tensors;
  std::uint64_t changed = 0, unchanged = 0, added = 0, removed = 0, misShaped = 0;
};

// Errors: a tensor that cannot be read (naming its file and name), an
// unsupported dtype (complex, float8) in a pair that must be compared, cancel.
StatusOr<DiffReport> diffCheckpoints(const CheckpointIndex& a, const CheckpointIndex& b,
                                     const DiffOptions& options = {});

}  // namespace fs::inspect
