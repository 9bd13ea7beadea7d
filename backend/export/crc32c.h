// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord
// framing, and TFRecord's masked form of it.
//
// NOTE [Masked CRC]
// A record stores CRCs of data that may itself hold CRCs (a TFRecord inside a
// TFRecord); a CRC of a string with embedded CRCs is weak, so TFRecord stores
// maskCrc32c(crc) = rotate-right-by-15(crc) + 0xa282ead8 (mod 2^32), as leveldb's
// log format does. Readers unmask before comparing.
//
// Thread-safety: stateless functions over a constant table.
#pragma once

#include <cstdint>
#include <string_view>

namespace fs::exporter {

// CRC-32C of `data`, continuing from `crc` (the value returned for the bytes before
// it; 0 to start). crc32c("123456789") == 0xE3069283.
std::uint32_t crc32c(std::string_view data, std::uint32_t crc = 0);

inline constexpr std::uint32_t kCrcMaskDelta = 0xa282ead8u;
inline std::uint32_t maskCrc32c(std::uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta;
}
inline std::uint32_t unmaskCrc32c(std::uint32_t masked) {
  const std::uint32_t rot = masked - kCrcMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace fs::exporter
