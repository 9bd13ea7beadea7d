// SeriesRouter: puts every series of a run's SeriesStore on the plot it
// belongs to (NOTE [Series names] in app/monitor/series_names.h), reading the
// x axis the user picked, and passes the store's growth and resets on to the
// plots. Per-rank losses are on the loss plot, hidden unless asked for.
//
//   loss/<ds>, val_loss/<ds>, loss/<ds>/rank<r>  -> loss
//   lr -> lr          grad_norm -> gradNorm      samples_per_s/<ds> -> throughput
//   step_time_s, data_time_s -> timing           gate/{attn,ff}/<n> -> gates
//   memory/rank<r>/<part> -> memory (and its latest-figures table)
// A dataset loss's abandoned segments (rewinds: a resume, a rollback; NOTE [Rewinds]
// in app/monitor/series_store.cpp) are dimmed curves on the loss plot.
//
// Ownership: borrows the store and the views, which must outlive it.
// Thread-safety: GUI thread only.
#pragma once

#include <QObject>
#include <QString>
#include <string>

#include "app/monitor/series_store.h"
#include "ui/plots/smoothing.h"

namespace fs::ui {

class CurvePlot;
class MemoryView;

struct RunPlots {
  CurvePlot* loss = nullptr;
  CurvePlot* lr = nullptr;
  CurvePlot* gradNorm = nullptr;
  CurvePlot* throughput = nullptr;
  CurvePlot* timing = nullptr;
  CurvePlot* gates = nullptr;
  MemoryView* memory = nullptr;
};

class SeriesRouter : public QObject {
  Q_OBJECT
 public:
  SeriesRouter(app::SeriesStore* store, RunPlots plots, QObject* parent = nullptr);

  // Every plot re-reads its curves along `axis`.
  void setXAxis(const app::XAxis& axis);
  const app::XAxis& xAxis() const { return axis_; }
  void setShowRanks(bool show);
  // On the curve plots (memory excepted: bytes are not smoothed).
  void setSmoothing(const Smoothing& smoothing);

  // "step", "samples seen (laion)", ...
  static QString axisLabel(const app::XAxis& axis);

 private:
  void route(const QString& name);
  void onChanged();
  void onReset();
  void updateLatestMemory();
  void addAbandoned();
  void forEachPlot(const std::function<void(CurvePlot*)>& f) const;

  app::SeriesStore* store_;
  RunPlots plots_;
  app::XAxis axis_;
  bool showRanks_ = false;
};

}  // namespace fs::ui
