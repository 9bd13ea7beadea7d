// ConfigDiffTable: the config fields that differ among the selected runs.
//
// One row per differing field (its schema path), one column per run, the
// run's value as text ("—" where the run has no such field, e.g. a dataset
// it does not have). Shows a one-line note instead when there is nothing to
// compare, nothing differs, or the diff failed.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QWidget>

#include "app/history/config_diff.h"

class QLabel;
class QTableWidget;

namespace fs::ui {

class ConfigDiffTable : public QWidget {
  Q_OBJECT
 public:
  explicit ConfigDiffTable(QWidget* parent = nullptr);

  void showDiff(const fs::app::RunConfigDiff& diff);
  // Empties the table and shows `note` instead (e.g. "select two runs").
  void showNote(const QString& note);

  QTableWidget* table() const { return table_; }
  QString note() const;

 private:
  QLabel* note_;
  QTableWidget* table_;
};

}  // namespace fs::ui
