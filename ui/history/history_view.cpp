#include "ui/history/history_view.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QProgressBar>
#include <QProgressDialog>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

#include "app/common/worker_thread.h"
#include "app/history/history_worker.h"
#include "ui/history/config_diff_table.h"
#include "ui/history/history_table_model.h"

namespace fs::ui {

HistoryView::HistoryView(QWidget* parent)
    : QWidget(parent),
      search_(new QLineEdit),
      searchTimer_(new QTimer(this)),
      table_(new QTableView),
      model_(new HistoryTableModel(this)),
      overlay_(new QPushButton(tr("Overlay curves"))),
      export_(new QPushButton(tr("Export\u2026"))),
      diff_(new ConfigDiffTable),
      status_(new QLabel),
      importBar_(new QProgressBar),
      importCancel_(new QPushButton(tr("Cancel import"))) {
  setObjectName(QStringLiteral("historyView"));
  search_->setObjectName(QStringLiteral("historySearch"));
  search_->setPlaceholderText(tr("Search runs by name, run id, status, host or folder"));
  search_->setClearButtonEnabled(true);
  searchTimer_->setSingleShot(true);
  searchTimer_->setInterval(250);
  // Typing restarts the timer: one query when the text settles, not one per key.
  connect(search_, &QLineEdit::textChanged, searchTimer_, qOverload<>(&QTimer::start));
  connect(searchTimer_, &QTimer::timeout, this, &HistoryView::refresh);
  connect(search_, &QLineEdit::returnPressed, this, [this] {
    searchTimer_->stop();
    refresh();
  });

  overlay_->setObjectName(QStringLiteral("historyOverlay"));
  overlay_->setEnabled(false);
  overlay_->setToolTip(tr("Overlay the curves of the selected runs (select two or more)"));
  connect(overlay_, &QPushButton::clicked, this, &HistoryView::overlaySelected);

  export_->setObjectName(QStringLiteral("historyExport"));
  export_->setEnabled(false);
  export_->setToolTip(tr("Export the selected runs: TensorBoard event files, or one CSV of every series"));
  auto* exportMenu = new QMenu(export_);
  exportMenu->addAction(tr("TensorBoard event files\u2026"), this,
                        [this] { chooseExport(app::RunExportFormat::kTensorBoard); });
  exportMenu->addAction(tr("CSV file\u2026"), this, [this] { chooseExport(app::RunExportFormat::kCsv); });
  export_->setMenu(exportMenu);

  table_->setObjectName(QStringLiteral("historyTable"));
  table_->setModel(model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  table_->verticalHeader()->setVisible(false);
  QHeaderView* header = table_->horizontalHeader();
  header->setStretchLastSection(true);
  // The view does not sort (sortingEnabled stays off): a header click only
  // moves the indicator, and the indicator drives the query's ORDER BY.
  header->setSectionsClickable(true);
  header->setSortIndicatorShown(true);
  header->setSortIndicator(HistoryTableModel::columnFor(sort_), order_);
  connect(header, &QHeaderView::sortIndicatorChanged, this, &HistoryView::onSortIndicatorChanged);
  // activated: double click, or Enter / Return on the current row.
  connect(table_, &QTableView::activated, this, [this](const QModelIndex& index) {
    if (!index.isValid()) return;
    const app::RunRecord& run = model_->run(index.row());
    if (run.location.isEmpty())
      emit openRun(run.runDir);
    else
      emit openRemoteRun(run.location, run.runDir);
  });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &HistoryView::onSelectionChanged);
  // Context menu: inspect the row's checkpoints (a remote row's over SSH, through its host).
  table_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(table_, &QWidget::customContextMenuRequested, this, [this](const QPoint& at) {
    const QModelIndex index = table_->indexAt(at);
    if (!index.isValid()) return;
    const app::RunRecord run = model_->run(index.row());
    QMenu menu(table_);
    QAction* inspect = menu.addAction(tr("Inspect checkpoints"));
    if (menu.exec(table_->viewport()->mapToGlobal(at)) != inspect) return;
    if (run.location.isEmpty())
      emit inspectCheckpoints(run.runDir);
    else
      emit inspectRemoteCheckpoints(run.location, run.runDir);
  });

  status_->setObjectName(QStringLiteral("historyStatus"));
  status_->setWordWrap(true);
  importBar_->setObjectName(QStringLiteral("historyImportBar"));
  importBar_->setRange(0, 1000);
  importBar_->setTextVisible(false);
  importBar_->hide();
  importCancel_->setObjectName(QStringLiteral("historyImportCancel"));
  importCancel_->hide();
  connect(importCancel_, &QPushButton::clicked, this, [this] {
    importCancel_->setEnabled(false);
    status_->setText(tr("Cancelling the import\u2026"));
    emit importCancelRequested();
  });

  auto* top = new QHBoxLayout;
  top->addWidget(search_, 1);
  top->addWidget(overlay_);
  top->addWidget(export_);
  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(table_);
  splitter->addWidget(diff_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(splitter, 1);
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(status_, 1);
  bottom->addWidget(importBar_);
  bottom->addWidget(importCancel_);
  layout->addLayout(bottom);
}

HistoryView::~HistoryView() {
  // The thread's destructor waits for the worker: stop an export first.
  if (exportThread_) exportThread_->worker()->cancel(exportId_);
}

void HistoryView::setSearchDelayMs(int ms) {
  searchTimer_->setInterval(qMax(0, ms));
}

void HistoryView::setPageSize(int rows) {
  pageSize_ = rows;
}

app::HistoryQuery HistoryView::currentQuery() const {
  app::HistoryQuery q;
  q.search = search_->text().trimmed();
  q.sort = sort_;
  q.order = order_;
  q.limit = pageSize_;
  q.requestId = lastQuery_;
  return q;
}

QList<int> HistoryView::selectedRows() const {
  QList<int> rows;
  for (const QModelIndex& index : table_->selectionModel()->selectedRows()) rows << index.row();
  std::sort(rows.begin(), rows.end());  // selectedRows() is in the order the user clicked
  return rows;
}

QStringList HistoryView::selectedRunIds() const {
  QStringList ids;
  for (int row : selectedRows()) ids << model_->run(row).runId;
  return ids;
}

QStringList HistoryView::selectedRunDirs() const {
  QStringList dirs;
  for (int row : selectedRows()) dirs << model_->run(row).runDir;
  return dirs;
}

QList<app::RunRecord> HistoryView::selectedRuns() const {
  QList<app::RunRecord> runs;
  for (int row : selectedRows()) runs << model_->run(row);
  return runs;
}

void HistoryView::overlaySelected() {
  const QList<app::RunRecord> runs = selectedRuns();
  if (runs.size() < 2) return;
  // NOTE [Overlay of remote runs]
  // The Compare page follows run directories of this machine (a RunMonitor per
  // run): a remote row's path would be looked for here and reported missing, or
  // name another folder. Refused, naming the remote rows, before anything is emitted.
  QStringList remote;
  for (const app::RunRecord& r : runs)
    if (!r.location.isEmpty()) remote << r.where();
  if (!remote.isEmpty()) {
    status_->setText(tr("Cannot overlay remote runs (the overlay reads run directories of this machine): %1")
                         .arg(remote.join(QStringLiteral(", "))));
    return;
  }
  QStringList dirs;
  for (const app::RunRecord& r : runs) dirs << r.runDir;
  emit overlayRuns(dirs);
}

app::RunExportWorker* HistoryView::exportWorker() {
  if (!exportThread_) {
    exportThread_ = std::make_unique<app::WorkerThread<app::RunExportWorker>>(
        new app::RunExportWorker, QStringLiteral("history-export"));
    connect(exportThread_->worker(), &app::RunExportWorker::finished, this, &HistoryView::onExportFinished);
    connect(exportThread_->worker(), &app::RunExportWorker::progress, this,
            [this](quint64 id, qint64 done, qint64 total) {
              if (id != exportId_ || !exportProgress_) return;
              // Per mille: QProgressDialog takes ints, files may pass 2 GiB.
              exportProgress_->setValue(total > 0 ? static_cast<int>(done * 1000 / total) : 0);
            });
  }
  return exportThread_->worker();
}

void HistoryView::chooseExport(app::RunExportFormat format) {
  if (format == app::RunExportFormat::kTensorBoard) {
    const QString dir = QFileDialog::getExistingDirectory(
        this, tr("Export to TensorBoard: a folder (one subfolder per run)"));
    if (!dir.isEmpty()) exportSelected(format, dir, false);
  } else {
    // The dialog asks before replacing a file: a yes there is --force.
    const QString file = QFileDialog::getSaveFileName(this, tr("Export to CSV"), QString(),
                                                      tr("CSV files (*.csv);;All files (*)"));
    if (!file.isEmpty()) exportSelected(format, file, true);
  }
}

quint64 HistoryView::exportSelected(app::RunExportFormat format, const QString& output, bool force) {
  const QList<app::RunRecord> runs = selectedRuns();
  if (runs.isEmpty()) return 0;
  if (exportProgress_) {
    status_->setText(tr("An export is still running; wait for it or cancel it."));
    return 0;
  }
  QStringList remote;
  app::RunExportRequest request;
  for (const app::RunRecord& r : runs) {
    if (!r.location.isEmpty()) remote << r.where();
    request.runDirs << r.runDir;
  }
  if (!remote.isEmpty()) {
    status_->setText(tr("Cannot export remote runs (the export reads run directories of this machine): %1")
                         .arg(remote.join(QStringLiteral(", "))));
    return 0;
  }
  request.id = ++exportId_;
  request.format = format;
  request.output = output;
  request.force = force;
  app::RunExportWorker* worker = exportWorker();

  exportProgress_ = new QProgressDialog(
      tr("Exporting %n run(s) to %1\u2026", nullptr, static_cast<int>(runs.size())).arg(output), tr("Cancel"),
      0, 1000, this);
  exportProgress_->setObjectName(QStringLiteral("historyExportProgress"));
  exportProgress_->setWindowTitle(tr("Export"));
  exportProgress_->setAutoClose(false);
  exportProgress_->setAutoReset(false);
  exportProgress_->setMinimumDuration(500);  // a small run finishes before the dialog would show
  const quint64 id = request.id;
  connect(exportProgress_, &QProgressDialog::canceled, this, [worker, id] { worker->cancel(id); });
  status_->setText(tr("Exporting %n run(s) to %1\u2026", nullptr, static_cast<int>(runs.size())).arg(output));
  QMetaObject::invokeMethod(
      worker, [worker, request] { worker->exportRuns(request); }, Qt::QueuedConnection);
  return id;
}

void HistoryView::onExportFinished(const app::RunExportResult& result) {
  if (result.id != exportId_) return;
  if (exportProgress_) {
    exportProgress_->disconnect(this);
    exportProgress_->deleteLater();
    exportProgress_ = nullptr;
  }
  QString text = result.message;
  // The first warning in full (it names the file and line); a corrupt file may have thousands.
  if (!result.warnings.isEmpty())
    text += QLatin1Char('\n') +
            tr("%n warning(s), the first: %1", nullptr, static_cast<int>(result.warnings.size()))
                .arg(result.warnings.first());
  status_->setText(text);
  emit exportFinished(result);
}

void HistoryView::refresh() {
  ++lastQuery_;
  emit queryRequested(currentQuery());
}

void HistoryView::setPage(const app::HistoryPage& page) {
  if (page.query.requestId != lastQuery_) return;  // an older request's answer
  if (!page.error.isEmpty()) {
    status_->setText(page.error);
    return;
  }
  // Keep the selection across refreshes (a live run's row updates under it).
  QStringList selected = selectedRunIds();
  restoringSelection_ = true;
  model_->setRuns(page.runs);
  QItemSelection selection;
  for (const QString& id : selected) {
    const int row = model_->rowOf(id);
    if (row >= 0)
      selection.select(model_->index(row, 0), model_->index(row, HistoryTableModel::kColumnCount - 1));
  }
  table_->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
  restoringSelection_ = false;
  onSelectionChanged();
  // Once: later refreshes (every write) must not undo the user's column widths.
  if (!columnsSized_ && !page.runs.isEmpty()) {
    table_->resizeColumnsToContents();
    columnsSized_ = true;
  }
  const int shown = static_cast<int>(page.runs.size());
  if (page.total == 0)
    status_->setText(page.query.search.isEmpty() ? tr("No runs recorded yet.")
                                                 : tr("No run matches the search."));
  else if (shown < page.total)
    status_->setText(tr("Showing %1 of %n run(s)", nullptr, page.total).arg(shown));
  else
    status_->setText(tr("%n run(s)", nullptr, page.total));
}

void HistoryView::setConfigDiff(const app::RunConfigDiff& diff) {
  if (diff.requestId != lastDiff_) return;
  diff_->showDiff(diff);
}

QProgressDialog* HistoryView::exportProgress() const {
  return exportProgress_.data();
}

void HistoryView::showError(const QString& operation, const QString& message) {
  status_->setText(tr("History (%1): %2").arg(operation, message));
}

void HistoryView::showImportProgress(const QString& runDir, qint64 done, qint64 total) {
  if (importBar_->isHidden()) {
    importBar_->show();
    importCancel_->show();
    importCancel_->setEnabled(true);
  }
  importBar_->setValue(total > 0 ? static_cast<int>(done * 1000 / total) : 0);
  importText_ = tr("Reading %1 into the history\u2026").arg(runDir);
  status_->setText(importText_);
}

void HistoryView::endImport() {
  importBar_->hide();
  importCancel_->hide();
  if (!importText_.isEmpty() && status_->text() == importText_)
    status_->clear();  // only the import's own line
  importText_.clear();
}

void HistoryView::onSelectionChanged() {
  if (restoringSelection_) return;
  const QStringList ids = selectedRunIds();
  overlay_->setEnabled(ids.size() >= 2);
  export_->setEnabled(!ids.isEmpty());
  if (ids.size() < 2) {
    diffRunIds_.clear();
    ++lastDiff_;  // drop a diff still on its way
    diff_->showNote(tr("Select two or more runs to compare their configs."));
    return;
  }
  if (diffRunIds_ == ids) return;  // same runs: the diff shown (or on its way) still holds
  diffRunIds_ = ids;
  diff_->showNote(tr("Comparing %n config(s)\u2026", nullptr, static_cast<int>(ids.size())));
  emit configDiffRequested(ids, ++lastDiff_);
}

void HistoryView::onSortIndicatorChanged(int column, Qt::SortOrder order) {
  const auto sort = HistoryTableModel::sortFor(column);
  if (!sort) {
    // Not sortable: put the indicator back where the query's order is.
    QHeaderView* header = table_->horizontalHeader();
    const QSignalBlocker block(header);
    header->setSortIndicator(HistoryTableModel::columnFor(sort_), order_);
    return;
  }
  sort_ = *sort;
  order_ = order;
  refresh();
}

void connectHistoryView(HistoryView* view, app::HistoryWorker* worker) {
  QObject::connect(view, &HistoryView::queryRequested, worker, &app::HistoryWorker::query,
                   Qt::QueuedConnection);
  QObject::connect(view, &HistoryView::configDiffRequested, worker, &app::HistoryWorker::diffConfigs,
                   Qt::QueuedConnection);
  QObject::connect(worker, &app::HistoryWorker::queried, view, &HistoryView::setPage);
  QObject::connect(worker, &app::HistoryWorker::configDiff, view, &HistoryView::setConfigDiff);
  QObject::connect(worker, &app::HistoryWorker::failed, view, &HistoryView::showError);
  QObject::connect(worker, &app::HistoryWorker::importProgress, view, &HistoryView::showImportProgress);
  QObject::connect(worker, &app::HistoryWorker::imported, view, &HistoryView::endImport);
  QObject::connect(worker, &app::HistoryWorker::importFailed, view,
                   [view](const QString& runDir, const QString& message, bool cancelled) {
                     view->endImport();
                     if (cancelled)
                       view->statusLabel()->setText(
                           HistoryView::tr("Import of %1 cancelled: nothing stored.").arg(runDir));
                     else
                       view->showError(QStringLiteral("import"), message);
                   });
  // cancel() is thread-safe: called directly, not queued behind the import it stops.
  QObject::connect(view, &HistoryView::importCancelRequested, view, [worker] { worker->cancel(); });
  QObject::connect(worker, &app::HistoryWorker::changed, view, &HistoryView::refresh);
}

}  // namespace fs::ui
