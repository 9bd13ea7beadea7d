// HistoryView: the runs table of the history, with search, sort, selection
// actions and a config diff of the selected runs.
//
// It never touches the database: it asks through queryRequested() (when the
// search text settles, on a header click, on refresh()) and
// configDiffRequested() (when 2+ runs are selected), and shows what it is
// given through setPage() / setConfigDiff(). Answers to older requests than
// the latest are dropped, so a slow query cannot overwrite a newer one.
// Sorting is the query's: a header click changes the ORDER BY, not the rows
// on screen. connectHistoryView() wires it to a HistoryWorker.
//
// "Export…" writes the selected local runs as TensorBoard event files (a folder,
// one subfolder per run) or one CSV, on a RunExportWorker thread, with a progress
// dialog whose Cancel removes what was written (app/history/run_export_worker.h).
//
// A remote run (RunRecord::location set) is listed as host:path; opening it
// asks for a re-attach through its host (openRemoteRun), and the overlay,
// which reads files of this machine, refuses it, naming it in the status line.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QPointer>
#include <QStringList>
#include <QWidget>
#include <memory>

#include "app/history/config_diff.h"
#include "app/history/history_record.h"
#include "app/history/run_export_worker.h"

class QLabel;
class QLineEdit;
class QProgressBar;
class QProgressDialog;
class QPushButton;
class QTableView;
class QTimer;

namespace fs::app {
class HistoryWorker;
template <class Worker>
class WorkerThread;
}  // namespace fs::app

namespace fs::ui {

class ConfigDiffTable;
class HistoryTableModel;

class HistoryView : public QWidget {
  Q_OBJECT
 public:
  explicit HistoryView(QWidget* parent = nullptr);
  ~HistoryView() override;

  // How long the search text must stay unchanged before it is queried.
  void setSearchDelayMs(int ms);
  // Rows asked for per query.
  void setPageSize(int rows);
  // The query as the view would send it now (search, sort, order, page
  // size); its requestId is that of the last request sent.
  fs::app::HistoryQuery currentQuery() const;

  QStringList selectedRunIds() const;              // in table order
  QStringList selectedRunDirs() const;             // in table order
  QList<fs::app::RunRecord> selectedRuns() const;  // in table order

  QLineEdit* searchBox() const { return search_; }
  QTableView* table() const { return table_; }
  HistoryTableModel* model() const { return model_; }
  QPushButton* overlayButton() const { return overlay_; }
  QPushButton* exportButton() const { return export_; }
  // The export dialog of the export in progress; null when none runs.
  QProgressDialog* exportProgress() const;
  // The worker exports run on (made on first use; its thread lives as long as the view).
  fs::app::RunExportWorker* exportWorker();
  ConfigDiffTable* diffTable() const { return diff_; }
  QLabel* statusLabel() const { return status_; }
  // The bar and the Cancel button of a run being read into the history (a run
  // that ended, one added from a host); hidden while none is read.
  QProgressBar* importBar() const { return importBar_; }
  QPushButton* importCancelButton() const { return importCancel_; }

 public slots:
  // Asks for the current query now.
  void refresh();
  // Shows a page; pages answering an older request than the latest are dropped.
  void setPage(const fs::app::HistoryPage& page);
  // Shows a diff; diffs answering an older selection are dropped.
  void setConfigDiff(const fs::app::RunConfigDiff& diff);
  // Shows a worker's error in the status line.
  void showError(const QString& operation, const QString& message);
  // An import's progress (bytes of its events.jsonl read): shows the bar and Cancel.
  void showImportProgress(const QString& runDir, qint64 done, qint64 total);
  // The import ended (stored, failed or cancelled): hides them.
  void endImport();
  // Exports the selected runs to `output` (what the Export menu's file dialogs
  // return; `force`: the user agreed to replace it). Refuses remote runs and a second
  // export while one runs, saying so in the status line; returns the request id, 0
  // when refused.
  quint64 exportSelected(fs::app::RunExportFormat format, const QString& output, bool force);

 signals:
  void queryRequested(const fs::app::HistoryQuery& query);
  void configDiffRequested(const QStringList& runIds, quint64 requestId);
  void openRun(const QString& runDir);
  // A remote row: its run directory, absolute on `location` (an SSH destination).
  void openRemoteRun(const QString& location, const QString& runDir);
  void overlayRuns(const QStringList& runDirs);
  // The row's context menu "Inspect checkpoints" (a local run).
  void inspectCheckpoints(const QString& runDir);
  // The same for a remote row: its run directory on `location` (read over SSH).
  void inspectRemoteCheckpoints(const QString& location, const QString& runDir);
  // An export asked for by exportSelected() ended (done, failed or cancelled).
  void exportFinished(const fs::app::RunExportResult& result);
  // The import bar's Cancel: the history worker stops the import (nothing stored).
  void importCancelRequested();

 private:
  QList<int> selectedRows() const;  // ascending
  void onSelectionChanged();
  void onSortIndicatorChanged(int column, Qt::SortOrder order);
  void overlaySelected();
  void chooseExport(fs::app::RunExportFormat format);
  void onExportFinished(const fs::app::RunExportResult& result);

  QLineEdit* search_;
  QTimer* searchTimer_;
  QTableView* table_;
  HistoryTableModel* model_;
  QPushButton* overlay_;
  QPushButton* export_;
  std::unique_ptr<fs::app::WorkerThread<fs::app::RunExportWorker>> exportThread_;
  QPointer<QProgressDialog> exportProgress_;
  quint64 exportId_ = 0;  // the last request; the one running while exportProgress_ is set
  ConfigDiffTable* diff_;
  QLabel* status_;
  QProgressBar* importBar_;
  QPushButton* importCancel_;
  QString importText_;  // the status line an import in progress shows; endImport() clears only it
  fs::app::HistorySort sort_ = fs::app::HistorySort::kStarted;
  Qt::SortOrder order_ = Qt::DescendingOrder;
  int pageSize_ = 1000;
  quint64 lastQuery_ = 0;
  quint64 lastDiff_ = 0;
  QStringList diffRunIds_;  // the runs of the diff shown or asked for
  bool restoringSelection_ = false;
  bool columnsSized_ = false;
};

// Requests of `view` go to `worker` as queued calls; its answers come back to
// `view`, and every write it reports (changed()) makes the view refresh.
// REQUIRES: both outlive the connections (or are disconnected first).
void connectHistoryView(HistoryView* view, fs::app::HistoryWorker* worker);

}  // namespace fs::ui
