// CSV fields (RFC 4180 quoting) and numbers that read back to the same double.
#include "backend/export/csv_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

namespace fs::exporter {
namespace {

TEST(CsvField, PlainTextAsIs) {
  EXPECT_EQ(csvField("loss/laion"), "loss/laion");
  EXPECT_EQ(csvField(""), "");
  EXPECT_EQ(csvField("über-läuft"), "über-läuft");
}

TEST(CsvField, QuotesWhatNeedsIt) {
  EXPECT_EQ(csvField("a,b"), "\"a,b\"");
  EXPECT_EQ(csvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csvField("cr\r"), "\"cr\r\"");
  EXPECT_EQ(csvField(" padded "), "\" padded \"");
  EXPECT_EQ(csvField("\""), "\"\"\"\"");
}

TEST(CsvNumbers, ShortestRoundTrip) {
  EXPECT_EQ(formatDouble(0.0001), "0.0001");
  EXPECT_EQ(formatDouble(2.8125), "2.8125");
  EXPECT_EQ(formatDouble(81920000), "81920000");
  EXPECT_EQ(formatDouble(-0.03125), "-0.03125");
  EXPECT_EQ(formatDouble(9000000000), "9000000000");
  EXPECT_EQ(formatDouble(1e-300), "1e-300");
  EXPECT_EQ(formatDouble(1.5e300), "1.5e+300");
  for (double v : {0.1, 1.0 / 3.0, 1861.8, 1e-300, 123456789.123456789, std::numeric_limits<double>::max(),
                   std::numeric_limits<double>::denorm_min()}) {
    const std::string text = formatDouble(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
  }
}

TEST(CsvNumbers, NonFinite) {
  EXPECT_EQ(formatDouble(std::nan("")), "nan");
  EXPECT_EQ(formatDouble(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(formatDouble(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(CsvNumbers, UnixMillisAsSeconds) {
  EXPECT_EQ(formatUnixMillis(1717000000123), "1717000000.123");
  EXPECT_EQ(formatUnixMillis(1717000000005), "1717000000.005");
  EXPECT_EQ(formatUnixMillis(0), "0.000");
  EXPECT_EQ(formatUnixMillis(-1500), "-1.500");
}

}  // namespace
}  // namespace fs::exporter
