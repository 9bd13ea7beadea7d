// DiffView: what changed from checkpoint A to B (a DiffReport), one row per
// tensor in the report's order: changed first by relative change, then
// mis-shaped, added, removed, unchanged. Columns: tensor, change, max |change|,
// relative, cosine, changed elements, changed rows (2-D tensors: the moved
// rows of an embedding), shape A, shape B. A header click re-sorts by that
// column (numbers as numbers).
//
// Thread-safety: GUI thread only.
#pragma once

#include <QAbstractTableModel>
#include <QWidget>

#include "app/checkpoints/inspector_results.h"

class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace fs::ui {

class DiffTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    kTensor,
    kKind,
    kMaxAbs,
    kRelative,
    kCosine,
    kChanged,
    kRows,
    kShapeA,
    kShapeB,
    kColumnCount
  };
  static constexpr int kSortRole = Qt::UserRole;

  using QAbstractTableModel::QAbstractTableModel;
  void setReport(fs::inspect::DiffReport report);
  const fs::inspect::DiffReport& report() const { return report_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // "3, 7" / "128, 129 (+40 more)" for a 2-D tensor's changed rows; "" otherwise.
  static QString rowsText(const fs::inspect::TensorDiff& d);

 private:
  fs::inspect::DiffReport report_;
};

class DiffView : public QWidget {
  Q_OBJECT
 public:
  explicit DiffView(QWidget* parent = nullptr);

  void setResult(const fs::app::DiffResult& result);
  void setMessage(const QString& text);

  QTableView* table() const { return table_; }
  DiffTableModel* model() const { return model_; }
  QPushButton* openButton() const { return open_; }
  QLabel* summaryLabel() const { return summary_; }

 signals:
  void openRequested();  // "Compare with…": the inspector asks for B

 private:
  QPushButton* open_;
  QLabel* summary_;
  QTableView* table_;
  DiffTableModel* model_;
  QSortFilterProxyModel* proxy_;
};

}  // namespace fs::ui
