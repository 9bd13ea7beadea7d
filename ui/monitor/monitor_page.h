// MonitorPage: one followed run, live. Composes the monitor's views and wires
// them to a RunMonitor (app/monitor) and a ControlClient (app/control).
//
// See NOTE [Monitor page layout] in monitor_page.cpp.
//
// Ownership: borrows the monitor and the control client (they outlive it).
// Thread-safety: GUI thread only.
#pragma once

#include <QWidget>

#include "app/monitor/run_monitor.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QTabWidget;

namespace fs::app {
class ControlClient;
}

namespace fs::ui {

class CurvePlot;
class EstimateView;
class HeartbeatTable;
class RollbackTable;
class LayoutMapView;
class LayoutTable;
class LogView;
class MemoryView;
class RunCheckpointList;
class RunControlBar;
class RunStatusBar;
class SeriesRouter;
struct RunStatus;

class MonitorPage : public QWidget {
  Q_OBJECT
 public:
  MonitorPage(app::RunMonitor* monitor, app::ControlClient* control, QWidget* parent = nullptr);

  // A new run directory is being followed: clears what belonged to the last one.
  void runAttached(const QString& runDir);

  RunStatusBar* statusBar() const { return status_; }
  RunControlBar* controlBar() const { return controls_; }
  QTabWidget* tabs() const { return tabs_; }
  CurvePlot* lossPlot() const { return loss_; }
  MemoryView* memoryView() const { return memory_; }
  EstimateView* estimateView() const { return estimate_; }
  LayoutTable* layoutTable() const { return layout_; }
  LayoutMapView* layoutMap() const { return layoutMap_; }
  LogView* logView() const { return logs_; }
  // The checkpoints the run has written (its checkpoint events).
  RunCheckpointList* checkpointList() const { return checkpoints_; }
  QComboBox* xAxisChoice() const { return xAxis_; }
  CurvePlot* gatesPlot() const { return gates_; }
  // The loss-spike guard's rollbacks (under the loss plot, shown once there is one).
  RollbackTable* rollbackTable() const { return rollbacks_; }
  // The per-rank heartbeat board (Ranks tab) and its one-line summary.
  HeartbeatTable* heartbeatTable() const { return heartbeats_; }
  QLabel* heartbeatSummary() const { return heartbeatSummary_; }
  QString alertText() const;

  // The monitor's status as the status bar shows it (stalled overrides running).
  static RunStatus displayStatus(const app::RunStatus& status, bool stalled);

 signals:
  void alert(const QString& title, const QString& message);
  // A checkpoint of the followed run was double-clicked (absolute path).
  void inspectCheckpoint(const QString& path);

 private:
  QWidget* buildTrainingTab();
  void wireMonitor();
  void refreshStatus();
  void refreshAxisChoices();
  void refreshRollbacks();
  void refreshRollbackMarkers();
  QWidget* buildRanksTab();
  void applyAxisChoice();
  void applySmoothingChoice();
  void showAlert(const QString& title, const QString& message);

  app::RunMonitor* monitor_;
  app::ControlClient* control_;
  QLabel* runDir_;
  QLabel* attempt_ = nullptr;  // "attempt 2 of 3 — restarted after: ..." (app/monitor/run_attempts.h)
  RunStatusBar* status_;
  RunControlBar* controls_;
  QComboBox* xAxis_;
  QComboBox* smoothing_;
  QCheckBox* ranks_;
  QLabel* banner_;
  QTabWidget* tabs_;
  CurvePlot* loss_;
  CurvePlot* lr_;
  CurvePlot* gradNorm_;
  CurvePlot* throughput_;
  CurvePlot* timing_;
  CurvePlot* gates_;
  MemoryView* memory_;
  EstimateView* estimate_;
  LayoutTable* layout_;
  LayoutMapView* layoutMap_;
  LogView* logs_;
  RunCheckpointList* checkpoints_;
  RollbackTable* rollbacks_;
  HeartbeatTable* heartbeats_;
  QLabel* heartbeatSummary_;
  SeriesRouter* router_;
};

}  // namespace fs::ui
