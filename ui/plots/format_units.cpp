#include "ui/plots/format_units.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace fs::ui {
namespace {

// `digits` significant digits of v (already scaled into [1, 1024)); never fewer
// than the integer digits.
QString significant(double v, int digits) {
  const int whole = v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : 4;
  return QString::number(v, 'f', std::max(0, digits - whole));
}

QString threeDigits(double v) {
  return significant(v, 3);
}

}  // namespace

QString formatBytes(std::int64_t bytes) {
  return formatBytes(bytes, 3);
}

QString formatBytes(std::int64_t bytes, int digits) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const char* sign = bytes < 0 ? "-" : "";
  double v = std::fabs(double(bytes));
  if (v < 1024) return QStringLiteral("%1%2 B").arg(QLatin1String(sign)).arg(std::llabs(bytes));
  int unit = 0;
  // 1023.5 KiB prints as "1.00 MiB", not "1024 KiB".
  while (v >= 1023.5 && unit + 1 < int(std::size(kUnits))) {
    v /= 1024;
    ++unit;
  }
  return QStringLiteral("%1%2 %3").arg(QLatin1String(sign), significant(v, std::max(3, digits)),
                                       QLatin1String(kUnits[unit]));
}

QString formatNumber(double value, int digits) {
  return QString::number(value, 'g', std::clamp(digits, 1, 17));
}

QString formatCount(std::int64_t count) {
  static const char* const kSuffixes[] = {"", " K", " M", " B", " T", " P", " E"};
  double v = std::fabs(double(count));
  if (v < 1000) return QString::number(count);
  int unit = 0;
  while (v >= 999.5 && unit + 1 < int(std::size(kSuffixes))) {
    v /= 1000;
    ++unit;
  }
  return QStringLiteral("%1%2%3").arg(QLatin1String(count < 0 ? "-" : ""), threeDigits(v),
                                      QLatin1String(kSuffixes[unit]));
}

QString formatDuration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return QStringLiteral("-");
  const auto total = static_cast<std::int64_t>(std::llround(seconds));
  return QStringLiteral("%1:%2:%3")
      .arg(total / 3600)
      .arg(total / 60 % 60, 2, 10, QLatin1Char('0'))
      .arg(total % 60, 2, 10, QLatin1Char('0'));
}

QString formatInteger(std::int64_t value) {
  QString digits = QString::number(value < 0 ? -(value + 1) + std::uint64_t{1} : std::uint64_t(value));
  for (int i = digits.size() - 3; i > 0; i -= 3) digits.insert(i, QLatin1Char(','));
  return value < 0 ? QLatin1Char('-') + digits : digits;
}

}  // namespace fs::ui
