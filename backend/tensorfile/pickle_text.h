// Internal to the unpickler: scalar decoding (ints of any size, text forms of
// protocol 0) and opcode names for messages. Not public API.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "backend/tensorfile/pickle_heap.h"

namespace fs::tensorfile::detail {

std::string_view opcodeName(std::uint8_t op);

PyValuePtr intNode(PickleHeap& heap, std::int64_t v);
// LONG1 / LONG4 payload: little-endian two's complement of any length
// (kInt when it fits in int64, else kBigInt with decimal text; > 512 bytes is Unsupported).
StatusOr<PyValuePtr> longFromBytes(PickleHeap& heap, std::span<const std::byte> bytes);
// INT ("I01" is True, "I00" False) and LONG ("123L") text.
StatusOr<PyValuePtr> intFromText(PickleHeap& heap, std::string line, bool intOpcode);
StatusOr<PyValuePtr> floatFromText(PickleHeap& heap, const std::string& line);
// STRING: a quoted Python 2 str literal with backslash escapes.
StatusOr<PyValuePtr> strFromRepr(PickleHeap& heap, const std::string& line);
// UNICODE: raw-unicode-escape (\uXXXX, \UXXXXXXXX; other bytes are latin-1).
StatusOr<PyValuePtr> strFromRawUnicodeEscape(PickleHeap& heap, const std::string& line);

}  // namespace fs::tensorfile::detail
