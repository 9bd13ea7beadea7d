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
  std::string out(text.size() / 4 * 3 + 3, '\0');
  auto* o = reinterpret_cast<uint8_t*>(out.data());
  size_t n = 0;  // bytes written
  int quad = 0;  // data characters seen in the current group of four
  int pads = 0;  // '=' counted towards completing the current group
  uint32_t carry = 0;
  const auto* in = reinterpret_cast<const uint8_t*>(text.data());
  for (size_t pos = 0; pos < text.size();) {
    // Fast path: a whole group of four data characters (nearly all of an
    // image_base64), which the character loop below would decode alike.
    if (quad == 0 && pos + 4 <= text.size()) {
      const uint32_t a = kTable[in[pos]], b = kTable[in[pos + 1]], c = kTable[in[pos + 2]],
                     d = kTable[in[pos + 3]];
      if (((a | b | c | d) & 0xC0) == 0) {
        const uint32_t v = (a << 18) | (b << 12) | (c << 6) | d;
        o[n] = static_cast<uint8_t>(v >> 16);
        o[n + 1] = static_cast<uint8_t>(v >> 8);
        o[n + 2] = static_cast<uint8_t>(v);
        n += 3;
        pos += 4;
        continue;  // pads is already 0: '=' only counts from the group's third character on
      }
    }
    const uint8_t ch = in[pos];
    if (ch >= 0x80)
      return protocol::Status::invalidArgument(
          "base64: non-ASCII byte 0x" + std::string(1, "0123456789abcdef"[ch >> 4]) +
          std::string(1, "0123456789abcdef"[ch & 15]) + " at offset " + std::to_string(pos));
    ++pos;
    if (ch == '=') {
      // Padding only counts once the group holds two data characters.
      if (quad >= 2 && quad + ++pads >= 4) {
        out.resize(n);
        return out;
      }
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
        o[n++] = static_cast<uint8_t>((carry << 2) | (value >> 4));
        carry = value & 0x0F;
        quad = 2;
        break;
      case 2:
        o[n++] = static_cast<uint8_t>((carry << 4) | (value >> 2));
        carry = value & 0x03;
        quad = 3;
        break;
      default:
        o[n++] = static_cast<uint8_t>((carry << 6) | value);
        quad = 0;
        break;
    }
  }
  if (quad == 1)
    return protocol::Status::invalidArgument("base64: number of data characters (" +
                                             std::to_string(n / 3 * 4 + 1) +
                                             ") cannot be 1 more than a multiple of 4");
  if (quad != 0) return protocol::Status::invalidArgument("base64: incorrect padding");
  out.resize(n);
  return out;
}

}  // namespace fs::data
