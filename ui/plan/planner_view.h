// PlannerView: the FSDP memory plan of a config before it is launched.
//
//   [world] [nodes] [device memory GiB] [Plan] [Cancel] [Fit to cluster...] [progress]
//   [error: what the engine said]   [warning: estimates over the device memory]
//   table: one row per engine x policy x strategy (PlanTableModel)
//   tabs: Per-rank memory: one stacked bar per rank of the selected row, the device line
//         Layout map: the selected row's unit layout beside the reference's (LayoutMapView)
//
// The plan comes from `flamingo-train plan --json` through a PlanRunner (never
// on the GUI thread). Changing world or nodes re-plans after a short pause, so
// typing "16" plans once; the Plan button re-plans at once. The device memory
// only re-marks the rows. World and nodes start from the config's
// launch.nnodes x nproc_per_node and follow it when a new config changes them.
//
// "Fit to cluster..." opens a FitDialog (fit_dialog.h) on the same config; its Apply
// comes out as applyFit(), which the owner writes into the config being edited.
//
// Ownership: owns its runner and its fit dialog. Thread-safety: GUI thread only.
#pragma once

#include <QWidget>
#include <cstdint>
#include <optional>

#include "app/launch/engine_locator.h"
#include "app/plan/plan.h"
#include "backend/protocol/config/config_types.h"

class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTableView;
class QTimer;

namespace fs::app {
class PlanRunner;
}

namespace fs::ui {

class FitDialog;
class LayoutMapView;
class PlanTableModel;
class RankBarChart;

class PlannerView : public QWidget {
  Q_OBJECT
 public:
  explicit PlannerView(const app::EngineSearch& search = app::EngineSearch::fromEnvironment(),
                       QWidget* parent = nullptr);

  // The config to plan; plans it (after the pause) and takes world / nodes
  // from its launch section when they changed there.
  void setConfig(const protocol::RunConfig& config);

  // Device memory in bytes (the spin box is in GiB).
  std::int64_t deviceMemory() const;

  app::PlanRunner* runner() const { return runner_; }
  QSpinBox* worldBox() const { return world_; }
  QSpinBox* nodesBox() const { return nodes_; }
  QDoubleSpinBox* deviceMemoryBox() const { return device_; }
  QPushButton* planButton() const { return plan_; }
  QPushButton* cancelButton() const { return cancel_; }
  QProgressBar* progress() const { return progress_; }
  QLabel* errorLabel() const { return error_; }
  QLabel* warningLabel() const { return warning_; }
  QTableView* table() const { return table_; }
  PlanTableModel* model() const { return model_; }
  RankBarChart* chart() const { return chart_; }
  LayoutMapView* layoutMap() const { return layoutMap_; }
  QTabWidget* tabs() const { return tabs_; }
  QPushButton* fitButton() const { return fitButton_; }
  // The fit dialog, made on the first "Fit to cluster..."; nullptr before.
  FitDialog* fitDialog() const { return fit_; }

 public slots:
  // Plans the current config with the current world and nodes now.
  void replan();
  // Opens the fit dialog on the current config.
  void openFit();

 signals:
  // KEY=VALUE config assignments of the fit's chosen row (FitDialog::applyRequested).
  void applyFit(const QStringList& assignments);

 private:
  void showPlan(const app::Plan& plan);
  void showError(const app::PlanError& error);
  void showRunning(bool running);
  void showSelected();
  void updateWarnings();

  app::PlanRunner* runner_;
  std::optional<protocol::RunConfig> config_;
  QSpinBox* world_;
  QSpinBox* nodes_;
  QDoubleSpinBox* device_;
  QPushButton* plan_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* error_;
  QLabel* warning_;
  QTableView* table_;
  PlanTableModel* model_;
  RankBarChart* chart_;
  LayoutMapView* layoutMap_;
  QTabWidget* tabs_;
  QTimer* debounce_;
  QPushButton* fitButton_;
  FitDialog* fit_ = nullptr;
};

}  // namespace fs::ui
