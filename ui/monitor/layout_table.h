// LayoutTable: the FSDP unit layout (a `layout` event) as a sortable table
// with a one-line summary above it (units, parameters, trainable share,
// bytes per rank, limit on units gathered at once).
//
// Thread-safety: GUI thread only.
#pragma once

#include <QWidget>

#include "backend/protocol/events.h"

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

  QString summaryText() const;
  QTableView* view() const { return view_; }
  LayoutModel* model() const { return model_; }
  // The sorted rows the view shows (model() in sorted order).
  QSortFilterProxyModel* sortedModel() const { return sorted_; }

 private:
  LayoutModel* model_;
  QSortFilterProxyModel* sorted_;
  QTableView* view_;
  QLabel* summary_;
};

}  // namespace fs::ui
