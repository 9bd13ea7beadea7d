// How a plot axis turns tick values into labels, with as many significant
// digits as adjacent ticks need to read differently (see NOTE [Distinct tick
// labels] in axis_format.cpp). axis_ticker.h puts it on a QCustomPlot axis.
//
// Thread-safety: pure functions and values.
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>
#include <functional>

namespace fs::ui {

struct AxisFormat {
  // The value with `digits` (>= 3) significant digits.
  std::function<QString(double value, int digits)> label;
  // The unit ticks are stepped in for an axis whose largest |value| is `largest`
  // (1 for plain numbers; 1024^k for bytes, so steps are 0.2 MiB, not 200 kB).
  std::function<double(double largest)> unit;

  // formatNumber, unit 1: losses, lr ("1e-04"), gradient norms, throughput, steps.
  static AxisFormat plain();
  // formatBytes, stepped in the binary unit of the largest value: memory.
  static AxisFormat bytes();
};

// The labels of `ticks` (ascending): format.label at the fewest digits, from 3
// up to 17, that give every two adjacent different ticks different labels.
QStringList distinctTickLabels(const QVector<double>& ticks, const AxisFormat& format);

}  // namespace fs::ui
