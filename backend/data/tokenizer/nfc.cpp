#include "backend/data/tokenizer/nfc.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace fs::data::detail {
namespace {

struct NfcCombiningClass {
  uint32_t first, last;
  uint8_t ccc;
};
struct NfcDecomposition {
  uint32_t cp, a, b;  // b == 0: a singleton
};
struct NfcComposition {
  uint32_t a, b, c;
};
#include "backend/data/tokenizer/nfc_tables.inc"

// A byte that is not part of valid UTF-8, kept in the code point sequence.
constexpr uint32_t kRawByte = 0x80000000u;

// Hangul syllables (Unicode 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

uint8_t combiningClass(uint32_t cp) {
  const auto* end = std::end(kNfcCombiningClasses);
  const auto* it = std::upper_bound(std::begin(kNfcCombiningClasses), end, cp,
                                    [](uint32_t v, const NfcCombiningClass& r) { return v < r.first; });
  if (it == std::begin(kNfcCombiningClasses)) return 0;
  --it;
  return cp <= it->last ? it->ccc : 0;
}

const NfcDecomposition* decomposition(uint32_t cp) {
  const auto* end = std::end(kNfcDecompositions);
  const auto* it = std::lower_bound(std::begin(kNfcDecompositions), end, cp,
                                    [](const NfcDecomposition& d, uint32_t v) { return d.cp < v; });
  return it != end && it->cp == cp ? it : nullptr;
}

// The primary composite of `a` + `b`, or 0.
uint32_t compose(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* end = std::end(kNfcCompositions);
  const auto* it = std::lower_bound(std::begin(kNfcCompositions), end, std::pair{a, b},
                                    [](const NfcComposition& c, std::pair<uint32_t, uint32_t> v) {
                                      return c.a != v.first ? c.a < v.first : c.b < v.second;
                                    });
  return it != end && it->a == a && it->b == b ? it->c : 0;
}

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (const NfcDecomposition* d = decomposition(cp)) {
    decompose(d->a, out);
    if (d->b) decompose(d->b, out);
    return;
  }
  out.push_back(cp);
}

// Decodes one UTF-8 code point at `s[i]` (advancing `i`); a byte that does not start
// a valid, shortest-form sequence comes back as kRawByte | byte.
uint32_t nextCodePoint(std::string_view s, size_t& i) {
  const auto b0 = uint8_t(s[i]);
  size_t n = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
  if (n == 1) return ++i, b0;
  if (n == 0 || i + n > s.size()) return ++i, kRawByte | b0;
  uint32_t cp = b0 & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto b = uint8_t(s[i + k]);
    if ((b & 0xC0) != 0x80) return ++i, kRawByte | b0;
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return ++i, kRawByte | b0;
  i += n;
  return cp;
}

void append(uint32_t cp, std::string& out) {
  if (cp & kRawByte) {
    out += char(cp & 0xFF);
  } else if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

}  // namespace

const char* nfcUnicodeVersion() {
  return kNfcUnicodeVersion;
}

std::string toNfc(std::string_view text) {
  // Nothing below U+0300 decomposes to something NFC would not recompose, or combines.
  if (std::all_of(text.begin(), text.end(), [](char c) { return uint8_t(c) < 0xCC; }))
    return std::string(text);
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = nextCodePoint(text, i);
    if (cp & kRawByte)
      cps.push_back(cp);
    else
      decompose(cp, cps);
  }
  // Canonical ordering: each run of non-starters sorted (stably) by combining class.
  auto ccc = [](uint32_t cp) { return (cp & kRawByte) ? uint8_t(0) : combiningClass(cp); };
  for (size_t i = 0; i < cps.size();) {
    if (ccc(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && ccc(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + i, cps.begin() + j,
                     [&](uint32_t a, uint32_t b) { return ccc(a) < ccc(b); });
    i = j;
  }
  // Canonical composition: each character joins the last starter unless blocked.
  std::vector<uint32_t> out;
  out.reserve(cps.size());
  size_t starter = SIZE_MAX;  // index in `out`
  uint8_t lastCcc = 0;
  for (uint32_t cp : cps) {
    const uint8_t c = ccc(cp);
    const bool raw = cp & kRawByte;
    if (!raw && starter != SIZE_MAX && !(out[starter] & kRawByte)) {
      const bool adjacent = starter + 1 == out.size();
      if (adjacent || (lastCcc != 0 && lastCcc < c)) {
        if (uint32_t composite = compose(out[starter], cp)) {
          out[starter] = composite;
          continue;
        }
      }
    }
    if (c == 0) {
      starter = out.size();
      lastCcc = 0;
    } else {
      lastCcc = c;
    }
    out.push_back(cp);
  }
  std::string result;
  result.reserve(text.size());
  for (uint32_t cp : out) append(cp, result);
  return result;
}

}  // namespace fs::data::detail
