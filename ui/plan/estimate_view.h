// EstimateView: a followed run's planned memory beside what it measured.
//
//   [status: "ours full_shard / openflamingo, 4 ranks" | planning... | the engine's error]
//   table: part | estimate (per rank) | measured, latest | measured, peak | error
//
// planRun() asks `flamingo-train plan` for the run's own config.yaml, world
// and nodes, with the strategy and wrap policy the run uses (PlanRequest::
// runChoice) and the reference's FSDP1 beside it (planned() hands the plan on
// to the monitor's Layout map); setMeasured() takes the ranks' figures from the run's memory
// events (app::MeasuredRank, kept per run by RunMonitor). The measured side is the largest rank; the
// error is relative to the measured peak (app::compareEstimate).
//
// Ownership: owns its runner. Thread-safety: GUI thread only.
#pragma once

#include <QWidget>
#include <optional>
#include <vector>

#include "app/launch/engine_locator.h"
#include "app/plan/estimate_comparison.h"
#include "app/plan/plan.h"

class QLabel;
class QTableWidget;

namespace fs::app {
class PlanRunner;
}

namespace fs::ui {

class EstimateView : public QWidget {
  Q_OBJECT
 public:
  enum Column { kPart, kEstimate, kLatest, kPeak, kError, kColumnCount };

  explicit EstimateView(QWidget* parent = nullptr);

  void setEngineSearch(const app::EngineSearch& search);
  // Plans <runDir>/config.yaml for `world` ranks on `nodes` nodes.
  void planRun(const QString& runDir, int world, int nodes);
  void setMeasured(const std::vector<app::MeasuredRank>& ranks);
  // Another run: forgets the estimate and the measurement, cancels a plan.
  void clear();

  const std::optional<app::PlanEstimate>& estimate() const { return estimate_; }
  app::PlanRunner* runner() const { return runner_; }
  QLabel* statusLabel() const { return status_; }
  QTableWidget* table() const { return table_; }

 signals:
  // The whole plan of the run's config (ours and the reference's), for the live Layout map.
  void planned(const app::Plan& plan);
  void planFailed(const QString& error);

 private:
  void showPlan(const app::Plan& plan);
  void refreshTable();

  app::PlanRunner* runner_;
  QLabel* status_;
  QTableWidget* table_;
  std::optional<app::PlanEstimate> estimate_;
  int world_ = 0;
  std::vector<app::MeasuredRank> measured_;
};

}  // namespace fs::ui
