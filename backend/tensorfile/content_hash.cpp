#include "backend/tensorfile/content_hash.h"

#include <bit>
#include <cstdio>
#include <cstring>

namespace fs::tensorfile {
namespace {

constexpr std::uint64_t kP1 = 11400714785074694791ull;
constexpr std::uint64_t kP2 = 14029467366897019727ull;
constexpr std::uint64_t kP3 = 1609587929392839161ull;
constexpr std::uint64_t kP4 = 9650029242287828579ull;
constexpr std::uint64_t kP5 = 2870177450012600261ull;

std::uint64_t rotl(std::uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

// Hashes are defined on little-endian words; memcpy keeps unaligned reads legal.
std::uint64_t read64(const std::byte* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

std::uint32_t read32(const std::byte* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

std::uint64_t round(std::uint64_t acc, std::uint64_t input) {
  return rotl(acc + input * kP2, 31) * kP1;
}

std::uint64_t merge(std::uint64_t acc, std::uint64_t lane) {
  return (acc ^ round(0, lane)) * kP1 + kP4;
}

}  // namespace

std::uint64_t xxh64(std::span<const std::byte> bytes, std::uint64_t seed) {
  const std::byte* p = bytes.data();
  const std::byte* const end = p + bytes.size();
  std::uint64_t h;
  if (bytes.size() >= 32) {
    std::uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    for (; end - p >= 32; p += 32) {
      v1 = round(v1, read64(p));
      v2 = round(v2, read64(p + 8));
      v3 = round(v3, read64(p + 16));
      v4 = round(v4, read64(p + 24));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(merge(merge(merge(h, v1), v2), v3), v4);
  } else {
    h = seed + kP5;
  }
  h += bytes.size();
  for (; end - p >= 8; p += 8) h = rotl(h ^ round(0, read64(p)), 27) * kP1 + kP4;
  if (end - p >= 4) {
    h = rotl(h ^ (read32(p) * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p) h = rotl(h ^ (std::to_integer<std::uint64_t>(*p) * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

std::string contentHashText(std::uint64_t hash) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "xxh64:%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

}  // namespace fs::tensorfile
