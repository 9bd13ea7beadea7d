#include "ui/checkpoints/stats_panel.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>
#include <cmath>

#include "ui/plots/axis_ticker.h"
#include "ui/plots/format_units.h"

namespace fs::ui {
namespace {

struct Figure {
  const char* key;
  const char* label;
};
const Figure kFigures[] = {{"elements", "Elements"}, {"min", "Min"}, {"max", "Max"},
                           {"mean", "Mean"},         {"std", "Std"}, {"l2", "L2 norm"},
                           {"zeros", "Zeros"},       {"nan", "NaN"}, {"inf", "+Inf / -Inf"}};

QString integer(std::uint64_t v) {
  return formatInteger(static_cast<std::int64_t>(v));
}

}  // namespace

StatsPanel::StatsPanel(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel(tr("Select a tensor or module"))),
      message_(new QLabel),
      compute_(new QPushButton(tr("Compute statistics"))),
      cancel_(new QPushButton(tr("Cancel"))),
      progress_(new QProgressBar),
      log_(new QCheckBox(tr("Log counts"))),
      plot_(new QCustomPlot),
      bars_(new QCPBars(plot_->xAxis, plot_->yAxis)) {
  setObjectName(QStringLiteral("statsPanel"));
  // Tensor values can span a narrow range: labels with the digits they need to differ.
  plot_->xAxis->setTicker(QSharedPointer<DistinctTicker<QCPAxisTicker>>::create(AxisFormat::plain()));
  title_->setWordWrap(true);
  title_->setStyleSheet(QStringLiteral("font-weight: bold"));
  message_->setWordWrap(true);
  compute_->setObjectName(QStringLiteral("computeStats"));
  cancel_->setObjectName(QStringLiteral("cancelStats"));
  log_->setObjectName(QStringLiteral("logCounts"));
  progress_->setRange(0, 1000);
  progress_->setTextVisible(false);
  progress_->setVisible(false);
  cancel_->setVisible(false);

  auto* form = new QFormLayout;
  for (const Figure& f : kFigures) {
    auto* value = new QLabel(QStringLiteral("-"));
    value->setObjectName(QStringLiteral("figure_%1").arg(QLatin1String(f.key)));
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    values_.insert(QLatin1String(f.key), value);
    form->addRow(tr(f.label), value);
  }
  auto* run = new QHBoxLayout;
  run->addWidget(compute_);
  run->addWidget(progress_, 1);
  run->addWidget(cancel_);

  bars_->setWidthType(QCPBars::wtPlotCoords);
  bars_->setPen(Qt::NoPen);
  bars_->setBrush(QColor(0x1f, 0x77, 0xb4));
  plot_->yAxis->setLabel(tr("elements"));
  plot_->setMinimumHeight(180);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addLayout(run);
  layout->addWidget(message_);
  layout->addLayout(form);
  layout->addWidget(log_);
  layout->addWidget(plot_, 1);

  connect(compute_, &QPushButton::clicked, this, &StatsPanel::computeRequested);
  connect(cancel_, &QPushButton::clicked, this, &StatsPanel::cancelRequested);
  connect(log_, &QCheckBox::toggled, this, &StatsPanel::replot);
  setTarget(title_->text(), false);
}

void StatsPanel::setTarget(const QString& label, bool enabled) {
  title_->setText(label);
  compute_->setEnabled(enabled);
  message_->clear();
  for (QLabel* v : values_) v->setText(QStringLiteral("-"));
  histogram_.reset();
  replot();
}

void StatsPanel::setRunning(bool running) {
  progress_->setVisible(running);
  cancel_->setVisible(running);
  compute_->setEnabled(!running);
  if (running) {
    progress_->setValue(0);
    message_->setText(tr("Computing\u2026"));
  }
}

void StatsPanel::setProgress(quint64 done, quint64 total) {
  progress_->setValue(total == 0 ? 0 : static_cast<int>(done * 1000 / total));
}

QString StatsPanel::formatFigure(double value) {
  return std::isnan(value) ? QStringLiteral("NaN") : QString::number(value, 'g', 6);
}

void StatsPanel::setResult(const app::StatsResult& result) {
  setRunning(false);
  compute_->setEnabled(true);
  const tensorfile::Moments& m = result.stats.moments;
  values_[QStringLiteral("elements")]->setText(
      m.finite == m.count ? integer(m.count) : tr("%1 (%2 finite)").arg(integer(m.count), integer(m.finite)));
  values_[QStringLiteral("min")]->setText(m.min ? QString::fromStdString(m.min->toString())
                                                : QStringLiteral("-"));
  values_[QStringLiteral("max")]->setText(m.max ? QString::fromStdString(m.max->toString())
                                                : QStringLiteral("-"));
  values_[QStringLiteral("mean")]->setText(formatFigure(m.meanOrNaN()));
  values_[QStringLiteral("std")]->setText(formatFigure(m.stddev()));
  values_[QStringLiteral("l2")]->setText(formatFigure(m.l2Norm()));
  values_[QStringLiteral("zeros")]->setText(integer(m.zeros));
  values_[QStringLiteral("nan")]->setText(integer(m.nans));
  values_[QStringLiteral("inf")]->setText(
      QStringLiteral("%1 / %2").arg(integer(m.posInfs), integer(m.negInfs)));
  QStringList notes;
  notes << (result.tensors.size() == 1 ? tr("1 tensor") : tr("%1 tensors").arg(result.tensors.size()));
  if (result.fromCache) notes << tr("cached");
  if (!result.skipped.isEmpty())
    notes << tr("left out (dtype): %1").arg(result.skipped.join(QStringLiteral(", ")));
  message_->setText(notes.join(QStringLiteral("; ")));
  histogram_ = result.stats.histogram;
  replot();
}

void StatsPanel::setMessage(const QString& text) {
  setRunning(false);
  message_->setText(text);
}

void StatsPanel::setLogCounts(bool log) {
  log_->setChecked(log);
}

QMap<QString, QString> StatsPanel::figures() const {
  QMap<QString, QString> out;
  for (auto it = values_.begin(); it != values_.end(); ++it) out.insert(it.key(), it.value()->text());
  return out;
}

void StatsPanel::replot() {
  QVector<double> keys, heights;
  const bool logScale = log_->isChecked();
  if (histogram_ && !histogram_->counts.empty()) {
    const double width = (histogram_->hi - histogram_->lo) / static_cast<double>(histogram_->counts.size());
    bars_->setWidth(width);
    for (std::size_t i = 0; i < histogram_->counts.size(); ++i) {
      keys << (histogram_->binLow(i) + histogram_->binHigh(i)) / 2;
      heights << static_cast<double>(histogram_->counts[i]);
    }
    plot_->xAxis->setRange(histogram_->lo - width / 2, histogram_->hi + width / 2);
  }
  if (logScale) {
    plot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
    plot_->yAxis->setTicker(QSharedPointer<DistinctTicker<QCPAxisTickerLog>>::create(AxisFormat::plain()));
    // Bars of a log axis start at 1 (an empty bin shows nothing; one element a sliver).
    bars_->setBaseValue(0.8);
    double top = 1;
    for (double h : heights) top = std::max(top, h);
    plot_->yAxis->setRange(0.8, top * 1.5);
  } else {
    plot_->yAxis->setScaleType(QCPAxis::stLinear);
    plot_->yAxis->setTicker(QSharedPointer<DistinctTicker<QCPAxisTicker>>::create(AxisFormat::plain()));
    bars_->setBaseValue(0);
    double top = 1;
    for (double h : heights) top = std::max(top, h);
    plot_->yAxis->setRange(0, top * 1.05);
  }
  plot_->yAxis->setLabel(logScale ? tr("elements (log)") : tr("elements"));
  bars_->setData(keys, heights, true);
  plot_->replot();
}

}  // namespace fs::ui
