// Internal: bounds-checked little-endian reads and overflow-checked arithmetic
// shared by the readers of this folder. Not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>

namespace fs::tensorfile::detail {

// The unsigned little-endian integer of sizeof(T) bytes at `offset`, or nullopt
// when it does not fit in `bytes`.
template <class T>
std::optional<T> readLE(std::span<const std::byte> bytes, std::uint64_t offset) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return std::nullopt;
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<T>(static_cast<T>(std::to_integer<std::uint8_t>(bytes[offset + i])) << (8 * i));
  }
  return value;
}

// a + b and a * b, nullopt on overflow.
inline std::optional<std::uint64_t> addU64(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<std::uint64_t> mulU64(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// True when [offset, offset + length) lies inside a buffer of `size` bytes.
inline bool inBounds(std::uint64_t offset, std::uint64_t length, std::uint64_t size) {
  return offset <= size && length <= size - offset;
}

inline std::string asString(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace fs::tensorfile::detail
