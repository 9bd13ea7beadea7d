// MemoryView: memory over time per rank, with its breakdown, and the latest
// figures of each rank as a table.
//
// The plot has one curve per (rank, part): process RSS, parameters,
// gradients, optimizer state, gathered (unsharded) parameters, activations.
// Two selectors choose what is drawn: one part (coloured by rank) or all
// parts (coloured by part), and all ranks or one. y is in bytes and reads as
// "1.50 GiB". Data comes in as CurveSources (NOTE [Curve data contract]) and
// the table from setLatest(); the view never sees telemetry events. Under
// FSDP the table also says how many units were gathered at once at the peak
// (which ones: the Layout tab).
//
// Thread-safety: GUI thread only.
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "ui/plots/curve_source.h"

class QComboBox;
class QTableWidget;

namespace fs::ui {

class CurvePlot;

enum class MemoryPart { kRss, kParams, kGrads, kOptimizer, kGathered, kActivations };
inline constexpr int kMemoryPartCount = 6;
// "RSS", "parameters", "gradients", "optimizer state", "gathered", "activations".
QString memoryPartName(MemoryPart part);

// One rank's latest figures, all in bytes.
struct RankMemoryFigures {
  int rank = 0;
  std::int64_t step = 0;
  std::int64_t rss = 0;
  std::int64_t peak_rss = 0;
  std::int64_t params = 0;
  std::int64_t grads = 0;
  std::int64_t optimizer = 0;
  std::int64_t gathered = 0;
  std::int64_t activations = 0;
  std::optional<std::int64_t> device;                // absent on CPU
  std::optional<std::int64_t> device_peak;           // absent on CPU
  std::optional<std::int64_t> device_reserved;       // the device allocator's reserved bytes; absent on CPU
  std::optional<std::int64_t> device_reserved_peak;  // absent on CPU
  std::optional<int> gathered_units;                 // FSDP: most units gathered at once; absent otherwise
};

class MemoryView : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryView(QWidget* parent = nullptr);

  // The series of one part of one rank (x as the caller chose, y in bytes).
  void setSeries(int rank, MemoryPart part, CurveSource source);
  void clearSeries();
  // Replaces the table's rows, one per rank.
  void setLatest(const std::vector<RankMemoryFigures>& ranks);

  // nullopt: all parts / all ranks. The selectors follow.
  void showPart(std::optional<MemoryPart> part);
  void showRank(std::optional<int> rank);

  // "rank 1 · gradients": the plot's name for a series.
  static QString curveName(int rank, MemoryPart part);
  CurvePlot* plot() const { return plot_; }
  QTableWidget* table() const { return table_; }

 public slots:
  void dataGrew();
  void resetData();

 private:
  void updateVisibility();
  void addRankChoice(int rank);

  CurvePlot* plot_;
  QTableWidget* table_;
  QComboBox* part_;
  QComboBox* rank_;
  std::map<std::pair<int, int>, QString> series_;  // (rank, part) -> curve name
};

}  // namespace fs::ui
