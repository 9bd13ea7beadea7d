#include "ui/plots/plot_range.h"

#include <algorithm>
#include <cmath>

namespace fs::ui {

AxisRange fittedXRange(double lower, double upper, bool logAxis) {
  if (lower != upper) return {lower, upper};
  return logAxis ? AxisRange{lower / 2, upper * 2} : AxisRange{lower - 0.5, upper + 0.5};
}

AxisRange fittedYRange(double lower, double upper, bool logAxis) {
  if (logAxis) {
    const double pad = std::pow(upper / lower, 0.05);
    return {lower / (pad > 1 ? pad : 2), upper * (pad > 1 ? pad : 2)};
  }
  const double pad = upper > lower ? (upper - lower) * 0.05 : std::max(std::fabs(upper) * 0.05, 0.5);
  return {lower - pad, upper + pad};
}

}  // namespace fs::ui
