// FitDialog: the planner's "Fit to cluster" (docs/planner.md "Fit to a cluster").
//
//   [GPU: catalog list] [figures: nodes, GPUs per node, memory, ... blank = the catalog's]
//   [Fit] [Cancel] [busy]   [error: what the engine said]   [status: nothing fits / N fit]
//   table: ranked choices (rank, choice, step time, needs, margin, why), then misfits (what they exceed)
//   [Apply]: the selected ranked choice's values into the config being edited (applyRequested)
//
// The search runs in `flamingo-train plan --fit --json` through its own PlanRunner: the GUI
// thread never waits, and the planner view's plan is not superseded by a fit.
//
// Ownership: owns its runner. Thread-safety: GUI thread only.
#pragma once

#include <QDialog>
#include <QMap>
#include <optional>

#include "app/launch/engine_locator.h"
#include "app/plan/fit.h"
#include "backend/protocol/config/config_types.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace fs::app {
class PlanRunner;
struct PlanError;
}  // namespace fs::app

namespace fs::ui {

class FitDialog : public QDialog {
  Q_OBJECT
 public:
  explicit FitDialog(const app::EngineSearch& search, QWidget* parent = nullptr);

  void setConfig(const protocol::RunConfig& config);
  app::FitCluster cluster() const;
  const app::FitResult& result() const { return result_; }

  app::PlanRunner* runner() const { return runner_; }
  QComboBox* gpuBox() const { return gpu_; }
  QLineEdit* figure(const QString& flag) const { return figures_.value(flag); }
  QPushButton* fitButton() const { return fit_; }
  QPushButton* applyButton() const { return apply_; }
  QTableWidget* table() const { return table_; }
  QLabel* errorLabel() const { return error_; }
  QLabel* statusLabel() const { return status_; }

 public slots:
  void fit();

 signals:
  // KEY=VALUE assignments (config paths) that make the config the chosen row.
  void applyRequested(const QStringList& assignments);

 private:
  void showFit(const app::FitResult& fit);
  void showError(const app::PlanError& error);
  void applySelected();

  app::PlanRunner* runner_;
  std::optional<protocol::RunConfig> config_;
  app::FitResult result_;
  QComboBox* gpu_;
  QMap<QString, QLineEdit*> figures_;
  QPushButton* fit_;
  QPushButton* cancel_;
  QPushButton* apply_;
  QProgressBar* progress_;
  QLabel* error_;
  QLabel* status_;
  QTableWidget* table_;
};

}  // namespace fs::ui
