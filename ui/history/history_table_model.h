// HistoryTableModel: one page of run records as table rows.
//
// Holds the rows a HistoryPage brought and nothing else: it never sorts or
// filters (the query does, in SQL) and never reads the database. Columns:
// name, status, started, duration, steps, rollbacks, final losses, run
// directory.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QAbstractTableModel>
#include <QList>
#include <optional>

#include "app/history/history_record.h"

namespace fs::ui {

class HistoryTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kName, kStatus, kStarted, kDuration, kSteps, kRollbacks, kLosses, kRunDir, kColumnCount };
  // Role giving a row's run id (a QString) for any column.
  static constexpr int kRunIdRole = Qt::UserRole + 1;

  explicit HistoryTableModel(QObject* parent = nullptr);

  void setRuns(const QList<fs::app::RunRecord>& runs);
  const QList<fs::app::RunRecord>& runs() const { return runs_; }
  // The record of a row. REQUIRES: 0 <= row < rowCount().
  const fs::app::RunRecord& run(int row) const { return runs_.at(row); }
  // The row of a run id; -1 when it is not on this page.
  int rowOf(const QString& runId) const;

  // The query's sort key for a column; nullopt for columns the database
  // cannot sort by (final losses: one value per dataset).
  static std::optional<fs::app::HistorySort> sortFor(int column);
  static int columnFor(fs::app::HistorySort sort);  // -1 when no column shows it

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  QList<fs::app::RunRecord> runs_;
};

// "1:02:03" / "4:05"; empty for a negative duration (not known).
QString formatDuration(qint64 ms);
// "laion 2.81, mmc4 2.25" in key order.
QString formatLosses(const QMap<QString, double>& losses);

}  // namespace fs::ui
