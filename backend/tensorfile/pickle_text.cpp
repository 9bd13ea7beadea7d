#include "backend/tensorfile/pickle_text.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace fs::tensorfile::detail {
namespace {

constexpr std::size_t kMaxBigIntBytes = 512;

void appendUtf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decimal digits of the magnitude held in little-endian bytes.
std::string decimal(std::vector<std::uint8_t> mag) {
  // Base-256 little-endian -> repeated division by 10^9.
  std::vector<std::uint32_t> limbs;  // little-endian base 2^32
  for (std::size_t i = 0; i < mag.size(); i += 4) {
    std::uint32_t limb = 0;
    for (std::size_t k = 0; k < 4 && i + k < mag.size(); ++k)
      limb |= static_cast<std::uint32_t>(mag[i + k]) << (8 * k);
    limbs.push_back(limb);
  }
  std::string digits;
  while (!limbs.empty()) {
    std::uint64_t rem = 0;
    for (std::size_t i = limbs.size(); i-- > 0;) {
      const std::uint64_t cur = (rem << 32) | limbs[i];
      limbs[i] = static_cast<std::uint32_t>(cur / 1000000000u);
      rem = cur % 1000000000u;
    }
    while (!limbs.empty() && limbs.back() == 0) limbs.pop_back();
    for (int k = 0; k < 9; ++k) {
      digits += static_cast<char>('0' + rem % 10);
      rem /= 10;
      if (limbs.empty() && rem == 0) break;
    }
  }
  if (digits.empty()) digits = "0";
  std::reverse(digits.begin(), digits.end());
  return digits;
}

}  // namespace

std::string_view opcodeName(std::uint8_t op) {
  switch (op) {
    case '(':
      return "MARK";
    case '.':
      return "STOP";
    case '0':
      return "POP";
    case '1':
      return "POP_MARK";
    case '2':
      return "DUP";
    case 'F':
      return "FLOAT";
    case 'I':
      return "INT";
    case 'J':
      return "BININT";
    case 'K':
      return "BININT1";
    case 'L':
      return "LONG";
    case 'M':
      return "BININT2";
    case 'N':
      return "NONE";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 'R':
      return "REDUCE";
    case 'S':
      return "STRING";
    case 'T':
      return "BINSTRING";
    case 'U':
      return "SHORT_BINSTRING";
    case 'V':
      return "UNICODE";
    case 'X':
      return "BINUNICODE";
    case 'a':
      return "APPEND";
    case 'b':
      return "BUILD";
    case 'c':
      return "GLOBAL";
    case 'd':
      return "DICT";
    case '}':
      return "EMPTY_DICT";
    case 'e':
      return "APPENDS";
    case 'g':
      return "GET";
    case 'h':
      return "BINGET";
    case 'i':
      return "INST";
    case 'j':
      return "LONG_BINGET";
    case 'l':
      return "LIST";
    case ']':
      return "EMPTY_LIST";
    case 'o':
      return "OBJ";
    case 'p':
      return "PUT";
    case 'q':
      return "BINPUT";
    case 'r':
      return "LONG_BINPUT";
    case 's':
      return "SETITEM";
    case 't':
      return "TUPLE";
    case ')':
      return "EMPTY_TUPLE";
    case 'u':
      return "SETITEMS";
    case 'G':
      return "BINFLOAT";
    case 'B':
      return "BINBYTES";
    case 'C':
      return "SHORT_BINBYTES";
    case 0x80:
      return "PROTO";
    case 0x81:
      return "NEWOBJ";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 0x85:
      return "TUPLE1";
    case 0x86:
      return "TUPLE2";
    case 0x87:
      return "TUPLE3";
    case 0x88:
      return "NEWTRUE";
    case 0x89:
      return "NEWFALSE";
    case 0x8a:
      return "LONG1";
    case 0x8b:
      return "LONG4";
    case 0x8c:
      return "SHORT_BINUNICODE";
    case 0x8d:
      return "BINUNICODE8";
    case 0x8e:
      return "BINBYTES8";
    case 0x8f:
      return "EMPTY_SET";
    case 0x90:
      return "ADDITEMS";
    case 0x91:
      return "FROZENSET";
    case 0x92:
      return "NEWOBJ_EX";
    case 0x93:
      return "STACK_GLOBAL";
    case 0x94:
      return "MEMOIZE";
    case 0x95:
      return "FRAME";
    case 0x96:
      return "BYTEARRAY8";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
    default:
      return "unknown opcode";
  }
}

PyValuePtr intNode(PickleHeap& heap, std::int64_t v) {
  auto n = heap.node(PyKind::kInt);
  n->intValue = v;
  return n;
}

StatusOr<PyValuePtr> longFromBytes(PickleHeap& heap, std::span<const std::byte> bytes) {
  std::vector<std::uint8_t> b(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) b[i] = std::to_integer<std::uint8_t>(bytes[i]);
  const bool negative = !b.empty() && (b.back() & 0x80);
  // Drop redundant sign-extension bytes, then see whether it fits in int64.
  while (b.size() > 1 && b.back() == (negative ? 0xFF : 0x00) && ((b[b.size() - 2] & 0x80) != 0) == negative)
    b.pop_back();
  if (b.size() <= 8) {
    std::uint64_t u = negative ? ~std::uint64_t{0} : 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
      u &= ~(std::uint64_t{0xFF} << (8 * i));
      u |= static_cast<std::uint64_t>(b[i]) << (8 * i);
    }
    return intNode(heap, static_cast<std::int64_t>(u));
  }
  if (b.size() > kMaxBigIntBytes) {
    return heap.unsupported("integer of " + std::to_string(b.size()) + " bytes (more than " +
                            std::to_string(kMaxBigIntBytes) + ")");
  }
  if (Status st = heap.charge(b.size() * b.size() / 8); !st) return st;
  if (negative) {  // two's complement magnitude
    bool carry = true;
    for (auto& x : b) {
      x = static_cast<std::uint8_t>(~x);
      if (carry) carry = ++x == 0;
    }
  }
  auto n = heap.node(PyKind::kBigInt);
  n->text = (negative ? "-" : "") + decimal(std::move(b));
  return n;
}

StatusOr<PyValuePtr> intFromText(PickleHeap& heap, std::string line, bool intOpcode) {
  if (intOpcode && (line == "00" || line == "01")) return heap.boolean(line == "01");
  if (!intOpcode && !line.empty() && line.back() == 'L') line.pop_back();
  if (!line.empty() && line[0] == '+') line.erase(0, 1);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
  if (ec == std::errc() && p == line.data() + line.size()) return intNode(heap, v);
  const std::size_t start = !line.empty() && line[0] == '-' ? 1 : 0;
  const bool digits =
      line.size() > start && std::all_of(line.begin() + static_cast<std::ptrdiff_t>(start), line.end(),
                                         [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || line.size() > 2 * kMaxBigIntBytes)
    return heap.corrupt("bad integer text '" + line.substr(0, 40) + "'");
  std::string mag = line.substr(start);
  mag.erase(0, std::min(mag.find_first_not_of('0'), mag.size() - 1));
  auto n = heap.node(PyKind::kBigInt);
  n->text = (line[0] == '-' ? "-" : "") + mag;
  return n;
}

StatusOr<PyValuePtr> floatFromText(PickleHeap& heap, const std::string& line) {
  double v = 0;
  auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
  if (ec != std::errc() || p != line.data() + line.size())
    return heap.corrupt("bad float text '" + line.substr(0, 40) + "'");
  auto n = heap.node(PyKind::kFloat);
  n->floatValue = v;
  return n;
}

StatusOr<PyValuePtr> strFromRepr(PickleHeap& heap, const std::string& line) {
  if (line.size() < 2 || (line[0] != '\'' && line[0] != '"') || line.back() != line[0]) {
    return heap.corrupt("STRING argument is not a quoted literal");
  }
  std::string out;
  for (std::size_t i = 1; i + 1 < line.size(); ++i) {
    char c = line[i];
    if (c != '\\' || i + 2 >= line.size()) {
      out += c;
      continue;
    }
    c = line[++i];
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x': {
        const int hi = i + 2 < line.size() ? hexValue(line[i + 1]) : -1;
        const int lo = i + 2 < line.size() ? hexValue(line[i + 2]) : -1;
        if (hi < 0 || lo < 0) return heap.corrupt("bad \\x escape in STRING");
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          int v = c - '0';
          for (int k = 0; k < 2 && i + 2 < line.size() && line[i + 1] >= '0' && line[i + 1] <= '7'; ++k)
            v = v * 8 + (line[++i] - '0');
          out += static_cast<char>(v & 0xFF);
        } else if (c == '\\' || c == '\'' || c == '"') {
          out += c;
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  auto n = heap.node(PyKind::kStr);
  n->text = std::move(out);
  return n;
}

StatusOr<PyValuePtr> strFromRawUnicodeEscape(PickleHeap& heap, const std::string& line) {
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == '\\' && i + 1 < line.size() && (line[i + 1] == 'u' || line[i + 1] == 'U')) {
      const std::size_t digits = line[i + 1] == 'u' ? 4 : 8;
      if (i + 2 + digits > line.size()) return heap.corrupt("truncated \\u escape in UNICODE");
      std::uint32_t cp = 0;
      for (std::size_t k = 0; k < digits; ++k) {
        const int h = hexValue(line[i + 2 + k]);
        if (h < 0) return heap.corrupt("bad \\u escape in UNICODE");
        cp = cp * 16 + static_cast<std::uint32_t>(h);
      }
      if (cp > 0x10FFFF) return heap.corrupt("code point beyond U+10FFFF in UNICODE");
      appendUtf8(out, cp);
      i += 1 + digits;
    } else {
      appendUtf8(out, c);  // latin-1
    }
  }
  auto n = heap.node(PyKind::kStr);
  n->text = std::move(out);
  return n;
}

}  // namespace fs::tensorfile::detail
