// CurvePlot's mouse: the crosshair with values, the rubber band, the context menu.
#include <qcustomplot.h>

#include <QActionGroup>
#include <QEvent>
#include <QFileDialog>
#include <QMenu>
#include <QMouseEvent>
#include <algorithm>
#include <cmath>

#include "ui/plots/curve_plot.h"
#include "ui/plots/curve_plot_curve.h"
#include "ui/plots/plot_crosshair.h"

namespace fs::ui {
namespace {

QString number(double v) {
  return std::isnan(v) ? QStringLiteral("-") : QString::number(v, 'g', 6);
}

struct SmoothingChoice {
  const char* label;
  Smoothing smoothing;
};

}  // namespace

bool CurvePlot::eventFilter(QObject* watched, QEvent* event) {
  if (watched == plot_) {
    if (event->type() == QEvent::MouseButtonPress) {
      // Decided per press: QCustomPlot starts a rubber band instead of a pan
      // whenever a selection-rect mode is set.
      const auto* mouse = static_cast<QMouseEvent*>(event);
      const bool band = mouse->button() == Qt::LeftButton &&
                        (mouse->modifiers() & (Qt::ShiftModifier | Qt::ControlModifier));
      plot_->setSelectionRectMode(band ? QCP::srmZoom : QCP::srmNone);
    } else if (event->type() == QEvent::Leave) {
      crosshair_->hide();
    }
  }
  return QWidget::eventFilter(watched, event);
}

QString CurvePlot::valuesAt(double x) const {
  QStringList lines;
  const QString x_name = plot_->xAxis->label().isEmpty() ? QStringLiteral("x") : plot_->xAxis->label();
  lines << QStringLiteral("%1: %2").arg(x_name, number(x));
  const bool smoothed = smoothing_.active();
  auto value = [this](double v) {
    return y_format_.label && !std::isnan(v) ? y_format_.label(v, 3) : number(v);
  };
  for (const auto& c : curves_) {
    if (!c->visible) continue;
    c->series.sync();  // the mouse may come before the tick that takes in new points
    const std::size_t k = c->series.lastDrawableAt(x, log_y_);
    const CurveSpans drawn = c->series.drawn();
    if (k == MinMaxPyramid::npos) {
      lines << QStringLiteral("%1: -").arg(c->name);
    } else if (smoothed) {
      const CurveSpans raw = c->series.raw();
      lines << QStringLiteral("%1: %2 (raw %3)").arg(c->name, value(drawn.y[k]), value(raw.y[k]));
    } else {
      lines << QStringLiteral("%1: %2").arg(c->name, value(drawn.y[k]));
    }
  }
  return lines.join(QLatin1Char('\n'));
}

void CurvePlot::showCrosshair(double x) {
  moveCrosshair(plot_->xAxis->coordToPixel(x), plot_->axisRect()->top() + 4);
}

void CurvePlot::moveCrosshair(double pixel_x, double pixel_y) {
  const QRect rect = plot_->axisRect()->rect();
  if (curves_.empty() || pixel_x < rect.left() || pixel_x > rect.right() || pixel_y < rect.top() ||
      pixel_y > rect.bottom()) {
    crosshair_->hide();
    return;
  }
  const double x = plot_->xAxis->pixelToCoord(pixel_x);
  crosshair_->show(x, pixel_x, pixel_y, valuesAt(x));
}

void CurvePlot::showContextMenu(const QPoint& pos) {
  QMenu menu(this);
  menu.addAction(tr("Fit to data"), this, [this] {
    fitToData();
    plot_->replot(QCustomPlot::rpQueuedReplot);
  });
  QAction* log_x = menu.addAction(tr("Log x axis"), this, [this](bool on) { setLogX(on); });
  log_x->setCheckable(true);
  log_x->setChecked(log_x_);
  QAction* log_y = menu.addAction(tr("Log y axis"), this, [this](bool on) { setLogY(on); });
  log_y->setCheckable(true);
  log_y->setChecked(log_y_);

  QMenu* smoothing = menu.addMenu(tr("Smoothing"));
  // The half-life is in x units, so offer fractions of what is on screen.
  const double span = plot_->xAxis->range().size();
  const SmoothingChoice choices[] = {
      {"None", {}},
      {"EMA 0.6", {SmoothingKind::kEma, 0.6}},
      {"EMA 0.9", {SmoothingKind::kEma, 0.9}},
      {"EMA 0.99", {SmoothingKind::kEma, 0.99}},
      {"Time EMA, half-life 1% of view", {SmoothingKind::kTimeEma, span / 100}},
      {"Time EMA, half-life 5% of view", {SmoothingKind::kTimeEma, span / 20}},
      {"Running mean, 10 points", {SmoothingKind::kRunningMean, 10}},
      {"Running mean, 100 points", {SmoothingKind::kRunningMean, 100}},
      {"Running mean, 1000 points", {SmoothingKind::kRunningMean, 1000}},
  };
  auto* group = new QActionGroup(smoothing);
  for (const auto& choice : choices) {
    QAction* action = smoothing->addAction(tr(choice.label));
    action->setCheckable(true);
    action->setChecked(choice.smoothing == smoothing_ ||
                       (choice.smoothing.kind == SmoothingKind::kNone && !smoothing_.active()));
    group->addAction(action);
    const Smoothing s = choice.smoothing;
    connect(action, &QAction::triggered, this, [this, s] { setSmoothing(s); });
  }

  QMenu* save = menu.addMenu(tr("Export"));
  save->addAction(tr("PNG image\u2026"), this, [this] { exportWithDialog(PlotExportFormat::kPng); });
  save->addAction(tr("SVG drawing\u2026"), this, [this] { exportWithDialog(PlotExportFormat::kSvg); });
  save->addAction(tr("PDF document\u2026"), this, [this] { exportWithDialog(PlotExportFormat::kPdf); });
  save->addAction(tr("Data as CSV\u2026"), this, [this] { exportWithDialog(PlotExportFormat::kCsv); });
  menu.exec(plot_->mapToGlobal(pos));
}

void CurvePlot::exportWithDialog(PlotExportFormat format) {
  static const char* const kFilters[] = {"PNG image (*.png)", "SVG drawing (*.svg)", "PDF document (*.pdf)",
                                         "CSV table (*.csv)"};
  static const char* const kSuffixes[] = {".png", ".svg", ".pdf", ".csv"};
  const int index = int(format);
  QString path = QFileDialog::getSaveFileName(this, tr("Export plot"), QString(), tr(kFilters[index]));
  if (path.isEmpty()) return;
  if (!path.endsWith(QLatin1String(kSuffixes[index]), Qt::CaseInsensitive))
    path += QLatin1String(kSuffixes[index]);
  exportTo(path, format);
}

}  // namespace fs::ui
