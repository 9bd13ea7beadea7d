#include "ui/monitor/series_router.h"

#include <qcustomplot.h>

#include <QColor>
#include <QStringList>
#include <map>

#include "app/monitor/series_names.h"
#include "ui/monitor/rollback_marks.h"
#include "ui/plots/curve_plot.h"
#include "ui/plots/memory_view.h"

namespace fs::ui {
namespace {

// Datasets and gate layers get stable colours by their index.
QColor paletteColor(int i) {
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                  "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};
  return QColor(QLatin1String(kColors[i % 10]));
}

std::optional<MemoryPart> memoryPart(const QString& category) {
  if (category == QLatin1String("rss")) return MemoryPart::kRss;
  if (category == QLatin1String("params")) return MemoryPart::kParams;
  if (category == QLatin1String("grads")) return MemoryPart::kGrads;
  if (category == QLatin1String("optimizer")) return MemoryPart::kOptimizer;
  if (category == QLatin1String("gathered")) return MemoryPart::kGathered;
  if (category == QLatin1String("activations")) return MemoryPart::kActivations;
  return std::nullopt;  // peak and device figures: in the table, not plotted
}

}  // namespace

SeriesRouter::SeriesRouter(app::SeriesStore* store, RunPlots plots, QObject* parent)
    : QObject(parent), store_(store), plots_(plots) {
  connect(store_, &app::SeriesStore::seriesAdded, this, &SeriesRouter::route);
  connect(store_, &app::SeriesStore::changed, this, &SeriesRouter::onChanged);
  connect(store_, &app::SeriesStore::reset, this, &SeriesRouter::onReset);
  plots_.loss->setAxisLabels(axisLabel(axis_), tr("loss"));
  plots_.lr->setAxisLabels(axisLabel(axis_), tr("learning rate"));
  plots_.gradNorm->setAxisLabels(axisLabel(axis_), tr("gradient norm (before clipping)"));
  plots_.throughput->setAxisLabels(axisLabel(axis_), tr("samples/s"));
  plots_.timing->setAxisLabels(axisLabel(axis_), tr("seconds"));
  plots_.gates->setAxisLabels(axisLabel(axis_), tr("tanh(gate)"));
  for (const auto& name : store_->names()) route(QString::fromStdString(name));
  addAbandoned();
}

QString SeriesRouter::axisLabel(const app::XAxis& axis) {
  const QString ds = axis.dataset.empty() ? tr("all datasets") : QString::fromStdString(axis.dataset);
  switch (axis.kind) {
    case app::XKind::kStep:
      return tr("step");
    case app::XKind::kSamples:
      return tr("samples seen (%1)").arg(ds);
    case app::XKind::kTokens:
      return tr("tokens seen (%1)").arg(ds);
    case app::XKind::kWallTime:
      return tr("wall time (unix s)");
    case app::XKind::kRelativeTime:
      return tr("time since start (s)");
  }
  return {};
}

void SeriesRouter::forEachPlot(const std::function<void(CurvePlot*)>& f) const {
  for (CurvePlot* p :
       {plots_.loss, plots_.lr, plots_.gradNorm, plots_.throughput, plots_.timing, plots_.gates})
    f(p);
}

void SeriesRouter::setXAxis(const app::XAxis& axis) {
  if (axis == axis_) return;
  axis_ = axis;
  forEachPlot([&](CurvePlot* p) {
    p->setAxisLabels(axisLabel(axis_), p->customPlot()->yAxis->label());
    p->resetData();
  });
  plots_.memory->plot()->setAxisLabels(axisLabel(axis_), plots_.memory->plot()->customPlot()->yAxis->label());
  plots_.memory->resetData();
}

void SeriesRouter::setShowRanks(bool show) {
  showRanks_ = show;
  for (const auto& name : plots_.loss->curveNames()) {
    if (name.contains(QLatin1String("/rank"))) plots_.loss->setCurveVisible(name, show);
  }
}

void SeriesRouter::setSmoothing(const Smoothing& smoothing) {
  forEachPlot([&](CurvePlot* p) { p->setSmoothing(smoothing); });
}

void SeriesRouter::route(const QString& qname) {
  const std::string name = qname.toStdString();
  CurveSource source = [this, name] { return CurveSpans{store_->x(name, axis_), store_->y(name)}; };
  const QStringList parts = qname.split(QLatin1Char('/'));
  const auto datasets = store_->datasets();
  auto datasetColor = [&](const QString& ds) {
    const auto it = std::find(datasets.begin(), datasets.end(), ds.toStdString());
    return paletteColor(it == datasets.end() ? static_cast<int>(datasets.size())
                                             : static_cast<int>(it - datasets.begin()));
  };
  if (parts[0] == QLatin1String("loss") && parts.size() == 2) {
    plots_.loss->addCurve(qname, source, datasetColor(parts[1]));
  } else if (parts[0] == QLatin1String("loss") && parts.size() == 3) {
    plots_.loss->addCurve(qname, source, datasetColor(parts[1]).lighter(140));
    plots_.loss->setCurveVisible(qname, showRanks_);
  } else if (parts[0] == QLatin1String("val_loss")) {
    plots_.loss->addCurve(qname, source, datasetColor(parts.value(1)).darker(150));
  } else if (qname == QLatin1String(app::series::kLr.data())) {
    plots_.lr->addCurve(qname, source, paletteColor(0));
  } else if (qname == QLatin1String(app::series::kGradNorm.data())) {
    plots_.gradNorm->addCurve(qname, source, paletteColor(3));
  } else if (parts[0] == QLatin1String("samples_per_s")) {
    plots_.throughput->addCurve(qname, source, datasetColor(parts.value(1)));
  } else if (qname == QLatin1String(app::series::kStepTime.data())) {
    plots_.timing->addCurve(qname, source, paletteColor(0));
  } else if (qname == QLatin1String(app::series::kDataTime.data())) {
    plots_.timing->addCurve(qname, source, paletteColor(4));
  } else if (qname == QLatin1String(app::series::kCommTime.data())) {
    plots_.timing->addCurve(qname, source, paletteColor(2));
  } else if (parts[0] == QLatin1String("gate") && parts.size() == 3) {
    const int layer = parts[2].toInt();
    const QColor c = paletteColor(layer);
    plots_.gates->addCurve(qname, source, parts[1] == QLatin1String("attn") ? c : c.lighter(150));
  } else if (parts[0] == QLatin1String("memory") && parts.size() == 3 &&
             parts[1].startsWith(QLatin1String("rank"))) {
    const int rank = parts[1].mid(4).toInt();
    if (auto part = memoryPart(parts[2])) plots_.memory->setSeries(rank, *part, source);
  }
}

void SeriesRouter::onChanged() {
  forEachPlot([](CurvePlot* p) { p->dataGrew(); });
  plots_.memory->dataGrew();
  updateLatestMemory();
}

void SeriesRouter::onReset() {
  if (store_->names().empty()) {  // another run: its series will be announced again
    forEachPlot([](CurvePlot* p) { p->clearCurves(); });
    plots_.memory->clearSeries();
    plots_.memory->setLatest({});
    return;
  }
  forEachPlot([](CurvePlot* p) { p->resetData(); });  // a rewind: fewer points than drawn
  addAbandoned();
  plots_.memory->resetData();
  updateLatestMemory();
}

void SeriesRouter::addAbandoned() {
  const auto& datasets = store_->datasets();
  for (std::size_t d = 0; d < datasets.size(); ++d) {
    const std::string name = app::series::loss(datasets[d]);
    addAbandonedCurves(plots_.loss, store_, name, QString::fromStdString(name),
                       paletteColor(static_cast<int>(d)), [this] { return axis_; });
  }
}

void SeriesRouter::updateLatestMemory() {
  std::map<int, RankMemoryFigures> ranks;
  for (const auto& name : store_->names()) {
    if (name.rfind("memory/rank", 0) != 0) continue;
    const QStringList parts = QString::fromStdString(name).split(QLatin1Char('/'));
    if (parts.size() != 3) continue;
    const auto y = store_->y(name);
    if (y.empty()) continue;
    const int rank = parts[1].mid(4).toInt();
    auto& r = ranks[rank];
    r.rank = rank;
    const auto step = store_->x(name, app::XAxis{});
    r.step = step.empty() ? 0 : static_cast<std::int64_t>(step.back());
    const auto v = static_cast<std::int64_t>(y.back());
    const QString& part = parts[2];
    if (part == QLatin1String("rss"))
      r.rss = v;
    else if (part == QLatin1String("peak"))
      r.peak_rss = v;
    else if (part == QLatin1String("params"))
      r.params = v;
    else if (part == QLatin1String("grads"))
      r.grads = v;
    else if (part == QLatin1String("optimizer"))
      r.optimizer = v;
    else if (part == QLatin1String("gathered"))
      r.gathered = v;
    else if (part == QLatin1String("activations"))
      r.activations = v;
    else if (part == QLatin1String("device"))
      r.device = v;
    else if (part == QLatin1String("device_peak"))
      r.device_peak = v;
    else if (part == QLatin1String("device_reserved"))
      r.device_reserved = v;
    else if (part == QLatin1String("device_reserved_peak"))
      r.device_reserved_peak = v;
    else if (part == QLatin1String("gathered_units"))
      r.gathered_units = static_cast<int>(v);
  }
  std::vector<RankMemoryFigures> latest;
  for (auto& [rank, figures] : ranks) latest.push_back(figures);
  plots_.memory->setLatest(latest);
}

}  // namespace fs::ui
