#include "ui/plots/curve_plot.h"

#include <qcustomplot.h>

#include <QEvent>
#include <QMouseEvent>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "ui/plots/axis_ticker.h"
#include "ui/plots/curve_plot_curve.h"
#include "ui/plots/plot_crosshair.h"
#include "ui/plots/plot_range.h"
#include "ui/plots/view_clip.h"

// NOTE [Curve plot drawing, redraws and input]
// Each curve is drawn as the last value of each pixel column (the line) over
// the min / max of every point in the column (a translucent band of the same
// colour, one step per column so a one-point spike is a full pixel wide),
// re-bucketed whenever the x range or the plot's width changes (NOTE [Level of
// detail] in minmax_pyramid.cpp). With smoothing on, the line is the smoothed
// curve and the band stays the raw min / max: spikes never vanish. Data is read
// through CurveSources (NOTE [Curve data contract] in curve_source.h), never
// copied, except for a CSV export.
//
// Redraws are coalesced as PlotJuggler does: dataGrew() only marks the plot
// dirty and arms one single-shot timer (33 ms, ~30 Hz); its tick takes in the
// new points (incremental smoothing and pyramid), re-buckets and replots once,
// however many times data grew in between. A hidden plot (another tab) skips
// its ticks and catches up when shown.
//
// While "following" (the initial state, and after a double-click) each tick
// fits x to all the data and y to what is drawn; any zoom or pan by the user
// or by setXRange() stops following (switching a log axis refits).
// Before drawing, the buckets are clamped to the view (NOTE [Clamping to the
// view] in view_clip.h).
//
// Mouse: wheel zooms, left-drag pans, Shift/Ctrl + left-drag zooms to a
// rubber band, double-click fits to the data, right-click opens a menu (fit,
// log axes, smoothing, export). A vertical crosshair follows the mouse with
// each curve's value at that x.
//
// Exports render on the GUI thread and write on a pool thread (file_export.h);
// exportFinished() reports the outcome.

namespace fs::ui {
namespace {

constexpr int kDefaultTickMs = 33;  // ~30 Hz, however fast data arrives

// Tableau 10: distinct at a glance, readable on white.
const QColor kPalette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                           QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                           QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f), QColor(0xbc, 0xbd, 0x22),
                           QColor(0x17, 0xbe, 0xcf)};

void setGraphData(QCPGraph* graph, const Polyline& line) {
  QVector<QCPGraphData> points(qsizetype(line.x.size()));
  for (std::size_t i = 0; i < line.x.size(); ++i) points[qsizetype(i)] = QCPGraphData(line.x[i], line.y[i]);
  graph->data()->set(points, true);
}

}  // namespace

CurvePlot::CurvePlot(QWidget* parent)
    : QWidget(parent), plot_(new QCustomPlot(this)), tick_(new QTimer(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);

  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->axisRect()->setRangeDrag(Qt::Horizontal | Qt::Vertical);
  plot_->axisRect()->setRangeZoom(Qt::Horizontal | Qt::Vertical);
  plot_->setNoAntialiasingOnDrag(true);
  plot_->legend->setVisible(true);
  plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  plot_->setContextMenuPolicy(Qt::CustomContextMenu);
  plot_->installEventFilter(this);
  plot_->setMouseTracking(true);
  // Tick labels with the digits they need to differ (NOTE [Distinct tick labels]).
  for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis})
    axis->setTicker(QSharedPointer<DistinctTicker<QCPAxisTicker>>::create(AxisFormat()));

  crosshair_ = std::make_unique<PlotCrosshair>(plot_);

  tick_->setSingleShot(true);
  tick_->setInterval(kDefaultTickMs);
  connect(tick_, &QTimer::timeout, this, &CurvePlot::onTick);
  connect(plot_->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
          &CurvePlot::onXRangeChanged);
  connect(plot_->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] {
    if (setting_range_ == 0) setFollowing(false);
    for (auto& c : curves_) drawCurve(*c);  // the buckets stay; only their clamp to the view moves
  });
  // A new width needs new columns; afterLayout comes before the graphs draw.
  connect(plot_, &QCustomPlot::afterLayout, this, [this] {
    if (plot_->axisRect()->width() != bucket_columns_) rebucket();
  });
  connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this] {
    fitToData();
    plot_->replot(QCustomPlot::rpQueuedReplot);
  });
  connect(plot_, &QCustomPlot::mouseMove, this,
          [this](QMouseEvent* event) { moveCrosshair(event->position().x(), event->position().y()); });
  connect(plot_, &QWidget::customContextMenuRequested, this, &CurvePlot::showContextMenu);
}

CurvePlot::~CurvePlot() {
  // A dying QCustomPlot still sends events (a synthetic Leave) and signals;
  // they must not reach this half-destroyed CurvePlot.
  tick_->stop();
  plot_->removeEventFilter(this);
  plot_->xAxis->disconnect(this);
  plot_->yAxis->disconnect(this);
  plot_->disconnect(this);
  delete plot_;
}

CurvePlot::Curve* CurvePlot::find(const QString& name) const {
  for (const auto& c : curves_)
    if (c->name == name) return c.get();
  return nullptr;
}

void CurvePlot::addCurve(const QString& name, CurveSource source, const QColor& color) {
  Curve* curve = find(name);
  if (curve == nullptr) {
    curves_.push_back(std::make_unique<Curve>());
    curve = curves_.back().get();
    curve->name = name;
    curve->low = plot_->addGraph();
    curve->high = plot_->addGraph();
    curve->line = plot_->addGraph();
    curve->low->removeFromLegend();
    curve->high->removeFromLegend();
    curve->line->setName(name);
    curve->color = kPalette[next_color_++ % int(std::size(kPalette))];
  }
  if (color.isValid()) curve->color = color;
  curve->series.setSmoothing(smoothing_);
  curve->series.setSource(std::move(source));
  applyCurveStyle(*curve);
  dataGrew();
}

void CurvePlot::applyCurveStyle(Curve& curve) {
  QColor color = curve.color;
  if (curve.dimmed) color.setAlpha(110);
  QPen pen(color, 1, curve.dimmed ? Qt::DashLine : Qt::SolidLine);
  pen.setCosmetic(true);
  curve.line->setPen(pen);
  QColor band = curve.color;
  band.setAlpha(curve.dimmed ? 25 : 60);
  curve.low->setPen(Qt::NoPen);
  curve.high->setPen(Qt::NoPen);
  curve.high->setBrush(band);
  curve.high->setChannelFillGraph(curve.low);
  for (QCPGraph* g : {curve.low, curve.high, curve.line}) {
    g->setVisible(curve.visible);
    g->setAdaptiveSampling(false);  // the buckets are already one point per column
  }
  curve.high->setAntialiasedFill(false);
}

void CurvePlot::setCurveColor(const QString& name, const QColor& color) {
  Curve* curve = find(name);
  if (curve == nullptr || !color.isValid()) return;
  curve->color = color;
  applyCurveStyle(*curve);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void CurvePlot::setYFormat(AxisFormat format) {
  y_format_ = std::move(format);
  if (log_y_)
    plot_->yAxis->setTicker(QSharedPointer<DistinctTicker<QCPAxisTickerLog>>::create(y_format_));
  else
    plot_->yAxis->setTicker(QSharedPointer<DistinctTicker<QCPAxisTicker>>::create(y_format_));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void CurvePlot::removeCurve(const QString& name) {
  auto it = std::find_if(curves_.begin(), curves_.end(), [&](const auto& c) { return c->name == name; });
  if (it == curves_.end()) return;
  plot_->removeGraph((*it)->line);
  plot_->removeGraph((*it)->high);
  plot_->removeGraph((*it)->low);
  curves_.erase(it);
  dataGrew();
}

void CurvePlot::clearCurves() {
  for (const auto& c : curves_)
    for (QCPGraph* g : {c->line, c->high, c->low}) plot_->removeGraph(g);
  curves_.clear();
  next_color_ = 0;
  dataGrew();
}

QStringList CurvePlot::curveNames() const {
  QStringList names;
  for (const auto& c : curves_) names << c->name;
  return names;
}

void CurvePlot::setCurveVisible(const QString& name, bool visible) {
  Curve* curve = find(name);
  if (curve == nullptr || curve->visible == visible) return;
  curve->visible = visible;
  applyCurveStyle(*curve);
  if (visible && !curve->dimmed)
    curve->line->addToLegend();
  else
    curve->line->removeFromLegend();
  dataGrew();
}

void CurvePlot::setCurveDimmed(const QString& name, bool dimmed) {
  Curve* curve = find(name);
  if (curve == nullptr || curve->dimmed == dimmed) return;
  curve->dimmed = dimmed;
  applyCurveStyle(*curve);
  if (dimmed)
    curve->line->removeFromLegend();
  else if (curve->visible)
    curve->line->addToLegend();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool CurvePlot::isCurveDimmed(const QString& name) const {
  const Curve* curve = find(name);
  return curve != nullptr && curve->dimmed;
}

bool CurvePlot::isCurveVisible(const QString& name) const {
  const Curve* curve = find(name);
  return curve != nullptr && curve->visible;
}

void CurvePlot::setLegendVisible(bool visible) {
  plot_->legend->setVisible(visible);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QCPGraph* CurvePlot::lineGraph(const QString& name) const {
  const Curve* c = find(name);
  return c ? c->line : nullptr;
}
QCPGraph* CurvePlot::bandLowGraph(const QString& name) const {
  const Curve* c = find(name);
  return c ? c->low : nullptr;
}
QCPGraph* CurvePlot::bandHighGraph(const QString& name) const {
  const Curve* c = find(name);
  return c ? c->high : nullptr;
}

void CurvePlot::setAxisLabels(const QString& x, const QString& y) {
  plot_->xAxis->setLabel(x);
  plot_->yAxis->setLabel(y);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString CurvePlot::xLabel() const {
  return plot_->xAxis->label();
}

void CurvePlot::setLogX(bool log) {
  if (log == log_x_) return;
  log_x_ = log;
  applyScaleTypes();
}

void CurvePlot::setLogY(bool log) {
  if (log == log_y_) return;
  log_y_ = log;
  applyScaleTypes();
}

void CurvePlot::applyScaleTypes() {
  ++setting_range_;  // QCustomPlot moves a non-positive range when switching to log
  for (auto [axis, log] : {std::pair{plot_->xAxis, log_x_}, std::pair{plot_->yAxis, log_y_}}) {
    axis->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    const AxisFormat format = axis == plot_->yAxis ? y_format_ : AxisFormat();
    if (log)
      axis->setTicker(QSharedPointer<DistinctTicker<QCPAxisTickerLog>>::create(format));
    else
      axis->setTicker(QSharedPointer<DistinctTicker<QCPAxisTicker>>::create(format));
  }
  --setting_range_;
  fitToData();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void CurvePlot::setSmoothing(const Smoothing& smoothing) {
  if (smoothing == smoothing_) return;
  smoothing_ = smoothing;
  for (auto& c : curves_) c->series.setSmoothing(smoothing);
  dataGrew();
}

void CurvePlot::setXRange(double lower, double upper) {
  setFollowing(false);
  plot_->xAxis->setRange(lower, upper);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void CurvePlot::setYRange(double lower, double upper) {
  setFollowing(false);
  plot_->yAxis->setRange(lower, upper);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void CurvePlot::setReplotInterval(int ms) {
  tick_->setInterval(std::max(ms, 0));
}

void CurvePlot::setFollowing(bool following) {
  if (following == following_) return;
  following_ = following;
  emit followingChanged(following);
}

void CurvePlot::dataGrew() {
  if (!tick_->isActive()) tick_->start();
}

void CurvePlot::resetData() {
  for (auto& c : curves_) c->series.clearCaches();
  dataGrew();
}

void CurvePlot::flush() {
  tick_->stop();
  for (auto& c : curves_) c->series.sync();
  if (following_)
    fitToData();
  else
    rebucket();
}

void CurvePlot::onTick() {
  if (!isVisible()) {
    stale_while_hidden_ = true;
    return;
  }
  flush();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void CurvePlot::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (stale_while_hidden_) {
    stale_while_hidden_ = false;
    dataGrew();
  }
}

void CurvePlot::onXRangeChanged() {
  if (setting_range_ > 0) return;  // the plot's own change re-buckets once it is done
  setFollowing(false);
  rebucket();
}

void CurvePlot::rebucket() {
  const int columns = std::max(plot_->axisRect()->width(), 1);
  bucket_columns_ = plot_->axisRect()->width();
  const QCPRange range = plot_->xAxis->range();
  const std::vector<double> edges = columnEdges(range.lower, range.upper, columns, log_x_ && range.lower > 0);
  for (auto& c : curves_) bucketCurve(*c, edges);
}

void CurvePlot::bucketCurve(Curve& curve, const std::vector<double>& edges) {
  if (!curve.visible)
    curve.series.clearBuckets();
  else
    curve.series.bucket(edges, BucketOptions{.positive_y = log_y_, .positive_x = log_x_});
  drawCurve(curve);
}

void CurvePlot::drawCurve(Curve& curve) {
  // NOTE [Clamping to the view] in view_clip.h: far-off vertices stall Qt's rasteriser.
  const QCPRange xr = plot_->xAxis->range();
  const QCPRange yr = plot_->yAxis->range();
  const ViewBox view{xr.lower, xr.upper, yr.lower, yr.upper, log_x_ && xr.lower > 0, log_y_ && yr.lower > 0};
  const ColumnBuckets& b = curve.series.buckets();
  Polyline clamped;
  clampToView(b.x, b.line, view, &clamped);
  setGraphData(curve.line, clamped);
  // The band: one step per column, over the column's whole width.
  std::vector<double> step_x, step_low, step_high;
  step_x.reserve(2 * b.size());
  step_low.reserve(2 * b.size());
  step_high.reserve(2 * b.size());
  for (std::size_t i = 0; i < b.size(); ++i) {
    for (const double x : {b.left[i], b.right[i]}) {
      step_x.push_back(x);
      step_low.push_back(b.low[i]);
      step_high.push_back(b.high[i]);
    }
  }
  clampToView(step_x, step_low, view, &clamped);
  setGraphData(curve.low, clamped);
  clampToView(step_x, step_high, view, &clamped);
  setGraphData(curve.high, clamped);
}

void CurvePlot::fitToData() {
  for (auto& c : curves_) c->series.sync();
  double lower = std::numeric_limits<double>::infinity();
  double upper = -lower;
  for (auto& c : curves_) {
    double first = 0, last = 0;
    if (!c->visible || !c->series.xExtent(log_x_, &first, &last)) continue;
    lower = std::min(lower, first);
    upper = std::max(upper, last);
  }
  ++setting_range_;
  setFollowing(true);
  if (lower <= upper) {
    const AxisRange x = fittedXRange(lower, upper, log_x_);
    plot_->xAxis->setRange(x.lower, x.upper);
  }
  rebucket();  // also when the range stayed: the data under it changed
  fitY();
  --setting_range_;
}

void CurvePlot::fitY() {
  double lower = std::numeric_limits<double>::infinity();
  double upper = -lower;
  const QCPRange xr = plot_->xAxis->range();
  for (const auto& c : curves_) c->series.widenYExtent(xr.lower, xr.upper, &lower, &upper);
  if (!(lower <= upper)) return;
  ++setting_range_;
  const AxisRange y = fittedYRange(lower, upper, log_y_);
  plot_->yAxis->setRange(y.lower, y.upper);
  --setting_range_;
}

}  // namespace fs::ui
