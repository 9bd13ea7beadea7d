// Tensor metadata shared by every format, and strided views over file bytes.
//
// TensorRef is what a torch.save pickle says about a tensor (where its storage
// lives in the file, dtype, shape, strides, offset). TensorView is a resolved,
// validated view: the bytes from element [0, ..., 0] to one past the last
// element the strides can reach. Thread-safety: plain values and functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/protocol/status.h"
#include "backend/tensorfile/dtype.h"

namespace fs::tensorfile {

using fs::protocol::Status;
using fs::protocol::StatusOr;

// A tensor inside a torch.save file. Offsets are into the whole file's bytes.
struct TensorRef {
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // in elements, as tensor.stride()
  std::int64_t storageOffset = 0;     // in elements, as tensor.storage_offset()
  bool requiresGrad = false;
  bool isParameter = false;  // torch.nn.Parameter
  bool isMeta = false;       // a meta tensor: shape only, no storage or bytes

  std::string storageKey;    // "0": the record "<archive>/data/<key>"
  std::string storageEntry;  // "archive/data/0"
  std::string location;      // "cpu", "cuda:0", ... (where it was saved from)
  DType storageDtype = DType::kFloat32;
  std::int64_t storageNumel = 0;        // storage length in storageDtype elements
  std::uint64_t storageFileOffset = 0;  // first byte of the storage record in the file
  std::uint64_t storageByteSize = 0;    // bytes of the storage record
  bool storageReadable = true;          // false: the record is compressed/encrypted

  std::int64_t numel() const;
  std::uint64_t byteSize() const { return static_cast<std::uint64_t>(numel()) * itemSize(dtype); }
  bool isContiguous() const;
};

struct TensorView {
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // in elements
  std::span<const std::byte> bytes;   // element [0,...,0] onwards, covering every element

  std::int64_t numel() const;
  bool isContiguous() const;
};

// Row-major strides for `shape`.
std::vector<std::int64_t> contiguousStrides(const std::vector<std::int64_t>& shape);
// Product of the shape (1 for a 0-dim tensor); REQUIRES validateLayout passed.
std::int64_t numelOf(const std::vector<std::int64_t>& shape);
// The number of elements from [0,...,0] to one past the farthest reachable
// element (0 when the tensor has no elements). Rejects negative sizes or
// strides, rank mismatch, rank > 64 and overflow with InvalidArgument.
StatusOr<std::uint64_t> extentElements(const std::vector<std::int64_t>& shape,
                                       const std::vector<std::int64_t>& strides);

// The elements of `view` in row-major order, packed. REQUIRES: out.size() ==
// numel * itemSize(dtype), and view.bytes covers the view's extent (the
// readers of this library guarantee it).
void copyContiguous(const TensorView& view, std::span<std::byte> out);
std::vector<std::byte> toContiguous(const TensorView& view);

}  // namespace fs::tensorfile
