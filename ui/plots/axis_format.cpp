#include "ui/plots/axis_format.h"

#include <cmath>
#include <cstdint>

#include "ui/plots/format_units.h"

// NOTE [Distinct tick labels]
// A fixed three significant digits labelled two ticks of the Memory tab
// "196 MiB" (196.0 and 196.5 MiB), and QCustomPlot's default six digits can do
// the same to a loss that moves in its seventh digit. So an axis formats all of
// its ticks together: three digits when they differ at three (the common case,
// labels as short as before), else one more digit at a time until every two
// adjacent ticks read differently. Byte axes also step in binary units (0.5 MiB,
// not 500,000 bytes), so the extra digit reads "196.0 MiB", "196.5 MiB".

namespace fs::ui {
namespace {

constexpr int kMinDigits = 3;
constexpr int kMaxDigits = 17;

}  // namespace

AxisFormat AxisFormat::plain() {
  return {[](double v, int digits) { return formatNumber(v, digits); }, {}};
}

AxisFormat AxisFormat::bytes() {
  AxisFormat f;
  f.label = [](double v, int digits) { return formatBytes(std::int64_t(std::llround(v)), digits); };
  f.unit = [](double largest) {
    double unit = 1;
    while (largest / unit >= 1023.5 && unit < 0x1p60) unit *= 1024;  // formatBytes's unit for it
    return unit;
  };
  return f;
}

QStringList distinctTickLabels(const QVector<double>& ticks, const AxisFormat& format) {
  const auto label = format.label ? format.label : AxisFormat::plain().label;
  QStringList labels;
  for (int digits = kMinDigits; digits <= kMaxDigits; ++digits) {
    labels.clear();
    bool distinct = true;
    for (qsizetype i = 0; i < ticks.size(); ++i) {
      labels << label(ticks[i], digits);
      if (i > 0 && ticks[i] != ticks[i - 1] && labels[i] == labels[i - 1]) distinct = false;
    }
    if (distinct) break;
  }
  return labels;
}

}  // namespace fs::ui
