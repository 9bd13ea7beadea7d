// ComparePage: many runs' curves on one plot (50 and more), aligned by step
// or by samples seen, plus reference curves imported from CSV.
//
// Each run is read by its own RunMonitor (app/monitor) into its own series
// store, without rank logs, process or stall checks; a run that has finished
// is detached once read, so only live runs keep being followed. The plot shows
// one metric (a dataset's loss, lr, gradient norm, throughput) for every run,
// each curve named by its run directory. Steps a run abandoned (a rollback, a
// resume: the store's abandoned segments) are drawn dimmed in the run's colour.
//
// Ownership: owns the monitors of the runs it shows and the reference curves'
// arrays. Thread-safety: GUI thread only.
#pragma once

#include <QStringList>
#include <QWidget>
#include <memory>
#include <vector>

#include "app/history/reference_curve.h"
#include "app/monitor/series_store.h"

class QComboBox;
class QLabel;

namespace fs::app {
class RunMonitor;
}

namespace fs::ui {

class CurvePlot;

class ComparePage : public QWidget {
  Q_OBJECT
 public:
  explicit ComparePage(QWidget* parent = nullptr);
  ~ComparePage() override;

  // Replaces the runs shown.
  void setRuns(const QStringList& runDirs);
  // Adds every curve of an imported CSV (x read as the chosen x axis).
  void addReferenceCurves(const app::ReferenceCurveSet& set);

  CurvePlot* plot() const { return plot_; }
  QComboBox* metricChoice() const { return metric_; }
  QComboBox* xAxisChoice() const { return xAxis_; }
  int runCount() const { return static_cast<int>(runs_.size()); }
  // Points of run `i`'s curve of the current metric.
  std::size_t pointsOf(int i) const;

 signals:
  // The user asked to import a CSV; the window hands it to the history worker.
  void importReferenceRequested(const QString& path);

 private:
  struct Run;
  void rebuildCurves();
  void addAbandoned(std::size_t i);
  std::string metricName() const;
  app::XAxis axis() const;

  QComboBox* metric_;
  QComboBox* xAxis_;
  QLabel* summary_;
  CurvePlot* plot_;
  std::vector<std::unique_ptr<Run>> runs_;
  std::vector<app::ReferenceCurve> references_;
};

}  // namespace fs::ui
