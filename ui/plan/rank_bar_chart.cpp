#include "ui/plan/rank_bar_chart.h"

#include <qcustomplot.h>

#include <QVBoxLayout>
#include <algorithm>

#include "ui/plots/axis_ticker.h"

namespace fs::ui {
namespace {

// The colours of the same parts in the monitor's MemoryView, so a planned bar
// and a measured curve of one part look alike.
const QColor kPartColors[kPlanPartCount] = {QColor(0x1f, 0x77, 0xb4), QColor(0xd6, 0x27, 0x28),
                                            QColor(0x94, 0x67, 0xbd), QColor(0x2c, 0xa0, 0x2c),
                                            QColor(0xff, 0x7f, 0x0e)};

}  // namespace

QString planPartName(PlanPart part) {
  switch (part) {
    case PlanPart::kParameters:
      return QStringLiteral("parameters");
    case PlanPart::kGradients:
      return QStringLiteral("gradients");
    case PlanPart::kOptimizer:
      return QStringLiteral("optimizer state");
    case PlanPart::kGathered:
      return QStringLiteral("gathered peak");
    case PlanPart::kActivations:
      return QStringLiteral("activations");
  }
  return {};
}

std::int64_t planPartBytes(const app::PlanFigures& f, PlanPart part) {
  switch (part) {
    case PlanPart::kParameters:
      return f.parameters;
    case PlanPart::kGradients:
      return f.gradients;
    case PlanPart::kOptimizer:
      return f.optimizer;
    case PlanPart::kGathered:
      return f.gatheredPeak;
    case PlanPart::kActivations:
      return f.activations;
  }
  return 0;
}

RankBarChart::RankBarChart(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);
  setMinimumHeight(220);
  plot_->yAxis->setTicker(QSharedPointer<DistinctTicker<QCPAxisTicker>>::create(AxisFormat::bytes()));
  plot_->xAxis->setLabel(tr("rank"));
  QSharedPointer<QCPAxisTickerFixed> ranks(new QCPAxisTickerFixed);
  ranks->setTickStep(1.0);
  ranks->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  plot_->xAxis->setTicker(ranks);
  plot_->legend->setVisible(true);
  plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
  for (int p = 0; p < kPlanPartCount; ++p) {
    auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
    bars->setName(planPartName(static_cast<PlanPart>(p)));
    bars->setWidth(0.6);
    bars->setPen(QPen(kPartColors[p].darker(130)));
    bars->setBrush(kPartColors[p]);
    if (p > 0) bars->moveAbove(bars_[static_cast<size_t>(p - 1)]);
    bars_[static_cast<size_t>(p)] = bars;
  }
  device_line_ = new QCPItemStraightLine(plot_);
  device_line_->setPen(QPen(QColor(0xb7, 0x1c, 0x1c), 2, Qt::DashLine));
  device_line_->setVisible(false);
  rescale();
}

void RankBarChart::setRanks(const std::vector<app::PlanFigures>& ranks, const QString& title) {
  QVector<double> keys;
  std::array<QVector<double>, kPlanPartCount> values;
  highest_ = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    keys << static_cast<double>(r);
    std::int64_t top = 0;
    for (int p = 0; p < kPlanPartCount; ++p) {
      const std::int64_t v = planPartBytes(ranks[r], static_cast<PlanPart>(p));
      values[static_cast<size_t>(p)] << static_cast<double>(v);
      top += v;
    }
    highest_ = std::max(highest_, top);
  }
  for (int p = 0; p < kPlanPartCount; ++p)
    bars_[static_cast<size_t>(p)]->setData(keys, values[static_cast<size_t>(p)], true);
  plot_->xAxis->setLabel(title.isEmpty() ? tr("rank") : tr("rank · %1").arg(title));
  rescale();
}

void RankBarChart::clear() {
  setRanks({}, {});
}

void RankBarChart::setDeviceMemory(std::int64_t bytes) {
  device_ = bytes;
  device_line_->point1->setCoords(0, static_cast<double>(bytes));
  device_line_->point2->setCoords(1, static_cast<double>(bytes));
  device_line_->setVisible(bytes > 0);
  rescale();
}

double RankBarChart::barValue(PlanPart part, int rank) const {
  const auto data = bars_[static_cast<size_t>(part)]->data();
  const auto it = data->findBegin(rank, false);
  return it != data->constEnd() && it->key == rank ? it->value : 0.0;
}

int RankBarChart::barCount() const {
  return bars_[0]->data()->size();
}

void RankBarChart::rescale() {
  const int n = barCount();
  plot_->xAxis->setRange(-0.6, std::max(n, 1) - 0.4);
  const double top = static_cast<double>(std::max(highest_, device_));
  plot_->yAxis->setRange(0, top > 0 ? top * 1.12 : 1.0);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace fs::ui
