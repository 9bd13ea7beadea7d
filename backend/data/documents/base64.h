// Base64 decoding with the leniency of Python's `base64.b64decode(s)`
// (validate=False), which the MMC4 reference calls on `image_base64`.
//
// NOTE [Python base64 leniency] (CPython 3.11 `binascii.a2b_base64`, non-strict)
//  - the input must be ASCII (b64decode encodes a str to ASCII first), else error;
//  - characters outside A-Z a-z 0-9 + / and '=' are skipped (whitespace,
//    '-', '_', punctuation): they neither decode nor break the input;
//  - '=' counts as padding only after at least two data characters of a
//    group; once the group is complete with padding, decoding stops and the
//    rest of the input is ignored ("YWI=junk" -> "ab"); a stray '=' earlier
//    in a group is skipped;
//  - at the end, one leftover data character is an error (length), two or
//    three unpadded ones are "Incorrect padding".
// Older CPython versions (< 3.11) differ on some malformed '=' placements.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

#include "backend/protocol/status.h"

namespace fs::data {

// The decoded bytes, or InvalidArgument naming the problem as Python would.
protocol::StatusOr<std::string> decodeBase64Lenient(std::string_view text);

}  // namespace fs::data
