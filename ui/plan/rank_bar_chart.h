// RankBarChart: one stacked bar per rank of one estimate — parameters,
// gradients, optimizer state, gathered peak, activations, bottom to top, so a
// bar's top is the rank's peak — and a horizontal line at the device memory.
//
// Ranks come as rankFigures() gives them (NOTE [Per-rank figures of an
// estimate]); y reads in bytes ("40.0 GiB").
//
// Thread-safety: GUI thread only.
#pragma once

#include <QString>
#include <QWidget>
#include <array>
#include <cstdint>
#include <vector>

#include "app/plan/plan.h"

class QCPBars;
class QCPItemStraightLine;
class QCustomPlot;

namespace fs::ui {

enum class PlanPart { kParameters, kGradients, kOptimizer, kGathered, kActivations };
inline constexpr int kPlanPartCount = 5;
QString planPartName(PlanPart part);
std::int64_t planPartBytes(const app::PlanFigures& figures, PlanPart part);

class RankBarChart : public QWidget {
  Q_OBJECT
 public:
  explicit RankBarChart(QWidget* parent = nullptr);

  // Replaces the bars: ranks[r] is rank r's bar; `title` names the estimate.
  void setRanks(const std::vector<app::PlanFigures>& ranks, const QString& title);
  void clear();
  // The line; 0 hides it.
  void setDeviceMemory(std::int64_t bytes);

  // The height of `part` in rank r's bar (its own share, not the stack's top);
  // for tests and the tooltip.
  double barValue(PlanPart part, int rank) const;
  int barCount() const;
  QCustomPlot* customPlot() const { return plot_; }

 private:
  void rescale();

  QCustomPlot* plot_;
  std::array<QCPBars*, kPlanPartCount> bars_{};
  QCPItemStraightLine* device_line_;
  std::int64_t device_ = 0;
  std::int64_t highest_ = 0;
};

}  // namespace fs::ui
