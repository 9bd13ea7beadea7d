// TrainingStateView: the inspector's Training state tab, a TrainingStateResult
// (backend/inspect/training_state.h) as tables: a summary (what kind of
// checkpoint, step, iteration, epoch, data position sentence, RNG generators
// with size and hash), the optimizer's parameter groups, its per-parameter
// state (name, group, step, |exp_avg|, |exp_avg_sq|, shape; sortable,
// filtered by name) and the LR scheduler's state. A part the checkpoint does
// not carry reads "not in this checkpoint".
//
// It reads nothing: the inspector asks its worker (readRequested) and hands
// progress and the result in. Thread-safety: GUI thread only.
#pragma once

#include <QWidget>

#include "app/checkpoints/inspector_results.h"

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QStandardItemModel;
class QTableView;
class QTableWidget;

namespace fs::ui {

class TrainingStateView : public QWidget {
  Q_OBJECT
 public:
  enum ParamColumn { kId, kName, kGroup, kStep, kExpAvg, kExpAvgSq, kShape, kParamColumns };

  explicit TrainingStateView(QWidget* parent = nullptr);

  // Nothing shown: `text` says why ("Open a checkpoint…", a failure, "Cancelled.");
  // `canRead` shows the Read button.
  void setMessage(const QString& text, bool canRead);
  void setRunning(const QString& what);  // progress and Cancel
  void setProgress(quint64 done, quint64 total);
  void setResult(const fs::app::TrainingStateResult& result);
  bool hasResult() const { return hasResult_; }

  QLabel* summaryLabel() const { return summary_; }
  QLabel* schedulerLabel() const { return scheduler_; }
  QLabel* messageLabel() const { return message_; }
  QTableWidget* groupsTable() const { return groups_; }
  QTableView* paramsView() const { return paramsView_; }
  QSortFilterProxyModel* paramsProxy() const { return proxy_; }  // what the table shows, in order
  QLineEdit* filterEdit() const { return filter_; }
  QPushButton* readButton() const { return read_; }
  QPushButton* cancelButton() const { return cancel_; }
  QProgressBar* progressBar() const { return progress_; }

  // How figures read: %.6g (shared with tests).
  static QString number(double value);

 signals:
  void readRequested();
  void cancelRequested();

 private:
  void showContent(bool content);
  QString summaryHtml(const fs::app::TrainingStateResult& result) const;
  void fillGroups(const fs::inspect::TrainingState& state);
  void fillParams(const fs::inspect::TrainingState& state);

  QLabel* message_;
  QPushButton* read_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QWidget* content_;
  QLabel* summary_;
  QLabel* scheduler_;
  QLabel* groupsAbsent_;
  QTableWidget* groups_;
  QLabel* paramsTitle_;
  QLineEdit* filter_;
  QStandardItemModel* params_;
  QSortFilterProxyModel* proxy_;
  QTableView* paramsView_;
  bool hasResult_ = false;
};

}  // namespace fs::ui
