// DistinctTicker: the QCustomPlot ticker of every plot axis that shows values:
// labels through distinctTickLabels (axis_format.h), steps in the format's unit.
//
// Thread-safety: GUI thread (a ticker belongs to its axis). Ownership: shared by
// the axis (QSharedPointer), holds its AxisFormat by value.
#pragma once

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

#include "ui/plots/axis_format.h"

namespace fs::ui {

// A QCustomPlot ticker (QCPAxisTicker or QCPAxisTickerLog) that labels through
// distinctTickLabels and, on a linear axis, steps in format.unit.
template <class Base>
class DistinctTicker : public Base {
 public:
  explicit DistinctTicker(AxisFormat format) : format_(std::move(format)) {}
  const AxisFormat& format() const { return format_; }

 protected:
  double getTickStep(const QCPRange& range) override {
    const double unit =
        format_.unit ? format_.unit(std::max(std::abs(range.lower), std::abs(range.upper))) : 1;
    if (!(unit > 0) || unit == 1) return Base::getTickStep(range);
    return Base::getTickStep(QCPRange(range.lower / unit, range.upper / unit)) * unit;
  }
  QVector<QString> createLabelVector(const QVector<double>& ticks, const QLocale&, QChar, int) override {
    const QStringList labels = distinctTickLabels(ticks, format_);
    return QVector<QString>(labels.begin(), labels.end());
  }

 private:
  AxisFormat format_;
};

}  // namespace fs::ui
