// TFRecord framing byte by byte: length, masked CRC of the length, data, masked CRC
// of the data, little-endian.
#include "backend/export/tfrecord.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "backend/export/crc32c.h"

namespace fs::exporter {
namespace {

std::uint64_t le(const std::string& s, std::size_t at, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

TEST(TfRecord, FramesData) {
  const std::string data = "brain.Event:2";
  const std::string rec = tfRecord(data);
  ASSERT_EQ(rec.size(), data.size() + kTfRecordOverhead);
  EXPECT_EQ(le(rec, 0, 8), data.size());
  EXPECT_EQ(le(rec, 8, 4), maskCrc32c(crc32c(rec.substr(0, 8))));
  EXPECT_EQ(rec.substr(12, data.size()), data);
  EXPECT_EQ(le(rec, 12 + data.size(), 4), maskCrc32c(crc32c(data)));
}

TEST(TfRecord, KnownBytesOfAnEmptyRecord) {
  // Eight zero bytes of length; their CRC-32C and the empty data's (0), masked.
  const std::string rec = tfRecord("");
  ASSERT_EQ(rec.size(), kTfRecordOverhead);
  EXPECT_EQ(rec.substr(0, 8), std::string(8, '\0'));
  EXPECT_EQ(le(rec, 8, 4), maskCrc32c(crc32c(std::string(8, '\0'))));
  EXPECT_EQ(le(rec, 12, 4), 0xa282ead8u);  // mask(0) = 0 rotated + delta
}

TEST(TfRecord, AppendsBackToBack) {
  std::string file;
  appendTfRecord("a", &file);
  appendTfRecord(std::string(300, 'x'), &file);
  ASSERT_EQ(file.size(), 1 + 300 + 2 * kTfRecordOverhead);
  EXPECT_EQ(le(file, 1 + kTfRecordOverhead, 8), 300u);  // the second length, after the first record
}

}  // namespace
}  // namespace fs::exporter
