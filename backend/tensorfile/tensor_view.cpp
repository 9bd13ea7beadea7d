#include "backend/tensorfile/tensor_view.h"

#include <cstring>

#include "backend/tensorfile/byte_io.h"

namespace fs::tensorfile {
namespace {

constexpr std::size_t kMaxRank = 64;

std::int64_t product(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

// Contiguous in torch's sense: size-1 dimensions may have any stride.
bool contiguous(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& strides) {
  if (shape.size() != strides.size()) return false;
  if (product(shape) == 0) return true;
  std::int64_t expected = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

}  // namespace

std::int64_t TensorRef::numel() const {
  return product(shape);
}
bool TensorRef::isContiguous() const {
  return contiguous(shape, strides);
}
std::int64_t TensorView::numel() const {
  return product(shape);
}
bool TensorView::isContiguous() const {
  return contiguous(shape, strides);
}

std::vector<std::int64_t> contiguousStrides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> strides(shape.size());
  std::int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

std::int64_t numelOf(const std::vector<std::int64_t>& shape) {
  return product(shape);
}

StatusOr<std::uint64_t> extentElements(const std::vector<std::int64_t>& shape,
                                       const std::vector<std::int64_t>& strides) {
  if (shape.size() != strides.size()) {
    return Status::invalidArgument("shape has " + std::to_string(shape.size()) +
                                   " dimensions but strides have " + std::to_string(strides.size()));
  }
  if (shape.size() > kMaxRank)
    return Status::invalidArgument("rank " + std::to_string(shape.size()) + " exceeds 64");
  std::uint64_t numel = 1;
  std::uint64_t last = 0;  // index of the farthest element
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || strides[i] < 0) {
      return Status::invalidArgument("negative size or stride in dimension " + std::to_string(i));
    }
    auto n = detail::mulU64(numel, static_cast<std::uint64_t>(shape[i]));
    if (!n || *n > (std::uint64_t{1} << 62)) return Status::invalidArgument("element count overflows");
    numel = *n;
  }
  if (numel == 0) return std::uint64_t{0};
  for (std::size_t i = 0; i < shape.size(); ++i) {
    auto step =
        detail::mulU64(static_cast<std::uint64_t>(shape[i] - 1), static_cast<std::uint64_t>(strides[i]));
    auto sum = step ? detail::addU64(last, *step) : std::nullopt;
    if (!sum || *sum >= (std::uint64_t{1} << 62)) return Status::invalidArgument("stride extent overflows");
    last = *sum;
  }
  return last + 1;
}

void copyContiguous(const TensorView& view, std::span<std::byte> out) {
  const std::size_t item = itemSize(view.dtype);
  const std::size_t rank = view.shape.size();
  if (view.numel() == 0) return;
  if (view.isContiguous()) {
    std::memcpy(out.data(), view.bytes.data(), out.size());
    return;
  }
  // Fold the trailing dimensions that are contiguous into one memcpy block.
  std::size_t inner = rank;
  std::int64_t block = 1;
  while (inner > 0 && view.strides[inner - 1] == block) {
    block *= view.shape[inner - 1];
    --inner;
  }
  const std::size_t blockBytes = static_cast<std::size_t>(block) * item;
  std::vector<std::int64_t> index(inner, 0);
  std::size_t written = 0;
  while (written < out.size()) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < inner; ++d) offset += index[d] * view.strides[d];
    std::memcpy(out.data() + written, view.bytes.data() + static_cast<std::size_t>(offset) * item,
                blockBytes);
    written += blockBytes;
    for (std::size_t d = inner; d-- > 0;) {
      if (++index[d] < view.shape[d]) break;
      index[d] = 0;
    }
  }
}

std::vector<std::byte> toContiguous(const TensorView& view) {
  std::vector<std::byte> out(static_cast<std::size_t>(view.numel()) * itemSize(view.dtype));
  copyContiguous(view, out);
  return out;
}

}  // namespace fs::tensorfile
