// TFRecord framing, the container of TensorBoard event files.
//
// Wire, one record (all integers little-endian):
//   uint64 length of data
//   uint32 maskCrc32c(crc32c(the 8 length bytes))
//   byte   data[length]
//   uint32 maskCrc32c(crc32c(data))
// A file is records back to back, nothing before, between or after them.
//
// Thread-safety: stateless functions.
#pragma once

#include <string>
#include <string_view>

namespace fs::exporter {

inline constexpr std::size_t kTfRecordOverhead = 8 + 4 + 4;

// Appends the framed record holding `data` to `out`.
void appendTfRecord(std::string_view data, std::string* out);
// The framed record holding `data`.
std::string tfRecord(std::string_view data);

}  // namespace fs::exporter
