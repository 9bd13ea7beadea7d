#include "backend/export/crc32c.h"

#include <array>

namespace fs::exporter {

namespace {

constexpr std::uint32_t kCastagnoliReflected = 0x82F63B78u;

// One byte at a time through a 256-entry table, computed at compile time.
constexpr std::array<std::uint32_t, 256> makeTable() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ kCastagnoliReflected : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<std::uint32_t, 256> kTable = makeTable();

}  // namespace

std::uint32_t crc32c(std::string_view data, std::uint32_t crc) {
  std::uint32_t c = ~crc;
  for (unsigned char byte : data) c = kTable[(c ^ byte) & 0xFFu] ^ (c >> 8);
  return ~c;
}

}  // namespace fs::exporter
