#include "backend/data/documents/base64.h"

#include <array>
#include <cstdint>

namespace fs::data {
namespace {

constexpr uint8_t kSkip = 0xFF;

constexpr std::array<uint8_t, 256> makeTable() {
  std::array<uint8_t, 256> t{};
  for (auto& x : t) x = kSkip;
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (uint8_t i = 0; i < 64; ++i) t[static_cast<uint8_t>(alphabet[i])] = i;
  return t;
}
constexpr std::array<uint8_t, 256> kTable = makeTable();

}  // namespace

protocol::StatusOr<std::string> decodeBase64Lenient(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3 + 3);
  int quad = 0;  // data characters seen in the current group of four
  int pads = 0;  // '=' counted towards completing the current group
  uint32_t carry = 0;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    const auto ch = static_cast<uint8_t>(text[pos]);
    if (ch >= 0x80)
      return protocol::Status::invalidArgument(
          "base64: non-ASCII byte 0x" + std::string(1, "0123456789abcdef"[ch >> 4]) +
          std::string(1, "0123456789abcdef"[ch & 15]) + " at offset " + std::to_string(pos));
    if (ch == '=') {
      // Padding only counts once the group holds two data characters.
      if (quad >= 2 && quad + ++pads >= 4) return out;
      continue;
    }
    const uint8_t value = kTable[ch];
    if (value == kSkip) continue;
    pads = 0;
    switch (quad) {
      case 0:
        carry = value;
        quad = 1;
        break;
      case 1:
        out.push_back(static_cast<char>((carry << 2) | (value >> 4)));
        carry = value & 0x0F;
        quad = 2;
        break;
      case 2:
        out.push_back(static_cast<char>((carry << 4) | (value >> 2)));
        carry = value & 0x03;
        quad = 3;
        break;
      default:
        out.push_back(static_cast<char>((carry << 6) | value));
        quad = 0;
        break;
    }
  }
  if (quad == 1)
    return protocol::Status::invalidArgument("base64: number of data characters (" +
                                             std::to_string(out.size() / 3 * 4 + 1) +
                                             ") cannot be 1 more than a multiple of 4");
  if (quad != 0) return protocol::Status::invalidArgument("base64: incorrect padding");
  return out;
}

}  // namespace fs::data
