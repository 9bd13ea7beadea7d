#include "backend/export/tfrecord.h"

#include <cstdint>

#include "backend/export/crc32c.h"

namespace fs::exporter {

namespace {

template <class T>
void appendLittleEndian(T value, std::string* out) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
}

}  // namespace

void appendTfRecord(std::string_view data, std::string* out) {
  std::string length;
  appendLittleEndian<std::uint64_t>(data.size(), &length);
  out->append(length);
  appendLittleEndian<std::uint32_t>(maskCrc32c(crc32c(length)), out);
  out->append(data);
  appendLittleEndian<std::uint32_t>(maskCrc32c(crc32c(data)), out);
}

std::string tfRecord(std::string_view data) {
  std::string out;
  out.reserve(data.size() + kTfRecordOverhead);
  appendTfRecord(data, &out);
  return out;
}

}  // namespace fs::exporter
