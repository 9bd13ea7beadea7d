// The text of one CSV field (RFC 4180 quoting) and of the numbers in it.
//
// NOTE [CSV numbers]
// Values are doubles printed with the fewest digits that read back to the same
// double (std::to_chars), in plain notation up to 24 characters ("0.0001",
// "9000000000"), else scientific ("1e-300"), so pandas.read_csv(float_precision="round_trip") and any
// strtod give back the bits the run wrote; non-finite values are "nan", "inf" and
// "-inf", which pandas and spreadsheets read as numbers. Wall times are unix
// seconds with exactly three decimals (the events' milliseconds, no rounding).
//
// Thread-safety: stateless functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fs::exporter {

// `text` as a CSV field: as is, or in double quotes with inner quotes doubled when
// it holds a comma, a quote, CR, LF, or leading/trailing white space.
std::string csvField(std::string_view text);
// The shortest round-trip decimal of `v` ("0.0001", "2.8125", "81920000", "1e-300", "nan").
std::string formatDouble(double v);
// "1717000000.123" for 1717000000123; negative times keep their sign.
std::string formatUnixMillis(std::int64_t t_ms);

}  // namespace fs::exporter
