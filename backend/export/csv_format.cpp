#include "backend/export/csv_format.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace fs::exporter {

namespace {
constexpr std::ptrdiff_t kMaxPlainChars = 24;
}  // namespace

std::string csvField(std::string_view text) {
  const bool quote = text.find_first_of(",\"\r\n") != std::string_view::npos ||
                     (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.back() == ' ' ||
                                        text.back() == '\t'));
  if (!quote) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string formatDouble(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // The shortest round-trip digits in plain notation while that stays short (byte
  // counts, learning rates), else in scientific notation (1e-300).
  char buf[400];
  if (const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
      ec == std::errc() && end - buf <= kMaxPlainChars)
    return std::string(buf, end);
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  if (ec != std::errc()) return "nan";  // cannot happen: 400 bytes hold any double
  return std::string(buf, end);
}

std::string formatUnixMillis(std::int64_t t_ms) {
  const bool negative = t_ms < 0;
  // Magnitude as unsigned, so INT64_MIN has one too.
  const std::uint64_t mag =
      negative ? ~static_cast<std::uint64_t>(t_ms) + 1 : static_cast<std::uint64_t>(t_ms);
  std::string frac = std::to_string(mag % 1000);
  frac.insert(0, 3 - frac.size(), '0');
  return (negative ? "-" : "") + std::to_string(mag / 1000) + "." + frac;
}

}  // namespace fs::exporter
