// CRC-32C against published vectors (RFC 3720 appendix B.4, the "123456789" check
// value) and TFRecord's mask.
#include "backend/export/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace fs::exporter {
namespace {

TEST(Crc32c, CheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
}

TEST(Crc32c, Rfc3720Vectors) {
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32c, ContinuesAcrossPieces) {
  EXPECT_EQ(crc32c("6789", crc32c("12345")), 0xE3069283u);
}

TEST(Crc32c, MaskIsTfRecordsAndUnmasks) {
  // ((crc >> 15) | (crc << 17)) + 0xa282ead8, by hand for the check value.
  const std::uint32_t crc = 0xE3069283u;
  const std::uint32_t rotated = (crc >> 15) | (crc << 17);
  EXPECT_EQ(maskCrc32c(crc), static_cast<std::uint32_t>(rotated + 0xa282ead8u));
  EXPECT_NE(maskCrc32c(crc), crc);
  for (std::uint32_t v : {0u, 1u, 0xFFFFFFFFu, crc}) EXPECT_EQ(unmaskCrc32c(maskCrc32c(v)), v);
}

}  // namespace
}  // namespace fs::exporter
