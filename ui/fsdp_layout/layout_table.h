// LayoutTable: the FSDP unit layout (a `layout` event) as a sortable table
// with a one-line summary above it (units, parameters, trainable share,
// bytes per rank, limit on units gathered at once), and the gather window:
// the units one rank held gathered together at its peak (the memory event's
// gathered_at_peak), highlighted in the table, for the rank chosen above it,
// with a line saying what is highlighted ("... at rank 1's peak, step 40").
// Between steps only the root is gathered, so the peak, not the moment the
// event was sampled, is what shows the window at work.
//
// Thread-safety: GUI thread only; it is handed events and reads nothing.
#pragma once

#include <QWidget>
#include <optional>

#include "backend/protocol/wire/events.h"

class QComboBox;
class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace fs::ui {

class LayoutModel;

class LayoutTable : public QWidget {
  Q_OBJECT
 public:
  explicit LayoutTable(QWidget* parent = nullptr);

  void setLayout(const protocol::LayoutEvent& layout);
  // The latest memory event (every rank's entry); an empty one clears the highlight.
  void setMemory(const protocol::MemoryEvent& memory);
  // Highlights what `rank` had gathered at its peak; the rank selector follows.
  void showPeakOf(int rank);

  QString summaryText() const;
  // What the highlight shows, e.g. "Highlighted: the 2 units gathered together at rank 1's peak, step 40".
  QString peakText() const;
  QTableView* view() const { return view_; }
  LayoutModel* model() const { return model_; }
  // The sorted rows the view shows (model() in sorted order).
  QSortFilterProxyModel* sortedModel() const { return sorted_; }
  QComboBox* peakRankChoice() const { return peakRank_; }

 private:
  void refreshPeak();

  LayoutModel* model_;
  QSortFilterProxyModel* sorted_;
  QTableView* view_;
  QLabel* summary_;
  QComboBox* peakRank_;
  QLabel* peak_;
  protocol::MemoryEvent memory_;
};

}  // namespace fs::ui
