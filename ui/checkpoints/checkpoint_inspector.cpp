#include "ui/checkpoints/checkpoint_inspector.h"

#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTreeView>
#include <QVBoxLayout>

#include "app/checkpoints/inspector_worker.h"
#include "app/common/worker_thread.h"
#include "ui/checkpoints/diff_view.h"
#include "ui/checkpoints/module_tree_model.h"
#include "ui/checkpoints/stats_panel.h"
#include "ui/checkpoints/training_state_view.h"
#include "ui/plots/format_units.h"

// NOTE [Inspector layout]
//   [path, format, files, bytes] [run's checkpoints: picker] [Open ▾] [Verify hashes] [progress] [Cancel]
//   [error line]
//   tabs: Modules (tree | statistics of the selection) | Diff (B chosen with
//         "Compare with…") | Training state (TrainingStateView)
//   [a remote checkpoint's bytes fetched so far, of its files' bytes]
//
// Selecting a tensor computes its statistics at once (one tensor reads
// little, and the worker caches them); a module or section waits for
// "Compute statistics", since a subtree may be gigabytes. Selecting something
// else stops a statistics run still going (not when a hash check or diff runs
// too: the worker's cancel stops every request made so far). One request of each
// kind is current: a newer one's ticket supersedes it and late answers of an
// older one are dropped. Cancel stops everything the worker was asked so far.
// The training state reads every optimizer moment (gigabytes for a large
// model), so it is read when its tab is first shown for a checkpoint, not on open.

namespace fs::ui {

CheckpointInspector::CheckpointInspector(QWidget* parent)
    : QWidget(parent),
      thread_(std::make_unique<app::WorkerThread<app::InspectorWorker>>(
          new app::InspectorWorker, QStringLiteral("checkpoint-inspector"))),
      path_(new QLabel(
          tr("No checkpoint open: File \u2192 Open checkpoint\u2026, or drop a file or directory here."))),
      picker_(new QComboBox),
      hashButton_(new QPushButton(tr("Verify hashes"))),
      busy_(new QProgressBar),
      cancel_(new QPushButton(tr("Cancel"))),
      status_(new QLabel),
      tabs_(new QTabWidget),
      tree_(new QTreeView),
      model_(new ModuleTreeModel(this)),
      stats_(new StatsPanel),
      diff_(new DiffView),
      state_(new TrainingStateView),
      fetched_(new QLabel) {
  setObjectName(QStringLiteral("checkpointInspector"));
  setAcceptDrops(true);
  tree_->setModel(model_);
  tree_->setUniformRowHeights(true);
  tree_->setAlternatingRowColors(true);
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setSectionResizeMode(ModuleTreeModel::kName, QHeaderView::Interactive);

  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(tree_);
  split->addWidget(stats_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  tabs_->addTab(split, tr("Modules"));
  tabs_->addTab(diff_, tr("Diff"));
  tabs_->addTab(state_, tr("Training state"));
  fetched_->setObjectName(QStringLiteral("fetchedBytes"));
  fetched_->setVisible(false);

  status_->setWordWrap(true);
  status_->setVisible(false);
  status_->setStyleSheet(
      QStringLiteral("background: #fdecea; color: #b71c1c; padding: 4px; border-radius: 3px"));
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(buildHeader());
  layout->addWidget(status_);
  layout->addWidget(fetched_);
  layout->addWidget(tabs_, 1);

  connect(tree_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          &CheckpointInspector::onSelectionChanged);
  connect(stats_, &StatsPanel::computeRequested, this, &CheckpointInspector::computeStats);
  connect(stats_, &StatsPanel::cancelRequested, this, &CheckpointInspector::cancel);
  connect(diff_, &DiffView::openRequested, this, &CheckpointInspector::chooseComparison);
  connect(state_, &TrainingStateView::readRequested, this, &CheckpointInspector::readTrainingState);
  connect(state_, &TrainingStateView::cancelRequested, this, &CheckpointInspector::cancel);
  connect(tabs_, &QTabWidget::currentChanged, this, &CheckpointInspector::onTabChanged);
  wireWorker();
}

CheckpointInspector::~CheckpointInspector() {
  thread_->worker()->cancel();  // the thread's stop does not wait for a long run
}

QWidget* CheckpointInspector::buildHeader() {
  auto* header = new QWidget;
  auto* row = new QHBoxLayout(header);
  row->setContentsMargins(0, 0, 0, 0);
  path_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  path_->setWordWrap(true);
  picker_->setObjectName(QStringLiteral("runCheckpoints"));
  picker_->setVisible(false);
  picker_->setToolTip(tr("The run directory's checkpoints, newest first"));
  auto* open = new QPushButton(tr("Open"));
  auto* menu = new QMenu(open);
  menu->addAction(tr("Checkpoint file\u2026"), this, &CheckpointInspector::chooseFile);
  menu->addAction(tr("Checkpoint or run directory\u2026"), this, &CheckpointInspector::chooseDirectory);
  open->setMenu(menu);
  hashButton_->setObjectName(QStringLiteral("verifyHashes"));
  hashButton_->setEnabled(false);
  hashButton_->setToolTip(tr("Read every tensor our manifest records a hash for and compare"));
  busy_->setRange(0, 1000);
  busy_->setMaximumWidth(160);
  busy_->setVisible(false);
  cancel_->setObjectName(QStringLiteral("cancelTask"));
  cancel_->setVisible(false);
  row->addWidget(path_, 1);
  row->addWidget(picker_);
  row->addWidget(open);
  row->addWidget(hashButton_);
  row->addWidget(busy_);
  row->addWidget(cancel_);
  connect(hashButton_, &QPushButton::clicked, this, &CheckpointInspector::verifyHashes);
  connect(cancel_, &QPushButton::clicked, this, &CheckpointInspector::cancel);
  connect(picker_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (fillingPicker_ || i < 0) return;
    const QString path = picker_->itemData(i).toString();
    if (path.isEmpty() || (checkpoint() && (checkpoint()->path == path ||
                                            checkpoint()->path.endsWith(QLatin1Char(':') + path))))
      return;
    if (pickerRemote_)
      openRemote(std::shared_ptr<app::remote::Host>(), path);  // the host it was listed on
    else
      openPath(path);
  });
  return header;
}

void CheckpointInspector::wireWorker() {
  app::InspectorWorker* w = thread_->worker();
  connect(w, &app::InspectorWorker::opened, this, &CheckpointInspector::onOpened);
  connect(w, &app::InspectorWorker::runListed, this, &CheckpointInspector::onRunListed);
  connect(w, &app::InspectorWorker::progress, this, &CheckpointInspector::onProgress);
  connect(w, &app::InspectorWorker::failed, this, &CheckpointInspector::onFailed);
  connect(w, &app::InspectorWorker::statsReady, this, [this](quint64 ticket, const app::StatsResult& r) {
    if (ticket == statsRunning_) statsRunning_ = 0;
    if (ticket != statsTicket_) return;
    lastStats_ = r;
    stats_->setResult(r);
  });
  connect(w, &app::InspectorWorker::hashesReady, this, [this](quint64 ticket, const app::HashResult& r) {
    if (ticket != hashTicket_) return;
    setBusy({});
    model_->setHashStates(r.report.states);
    hashButton_->setText(tr("Hashes: %1 match, %2 differ").arg(r.report.matching).arg(r.report.differing));
    if (r.report.differing > 0) {
      QStringList names;
      for (const auto& n : r.report.differ) names << QString::fromStdString(n);
      showError(tr("%1: %2 of the manifest's hashes differ from the bytes: %3")
                    .arg(checkpoint()->path)
                    .arg(r.report.differing)
                    .arg(names.join(QStringLiteral(", "))));
    }
  });
  connect(w, &app::InspectorWorker::diffReady, this, [this](quint64 ticket, const app::DiffResult& r) {
    if (ticket != diffTicket_) return;
    setBusy({});
    diff_->setResult(r);
  });
  connect(w, &app::InspectorWorker::trainingStateReady, this,
          [this](quint64 ticket, const app::TrainingStateResult& r) {
            if (ticket == stateTicket_) state_->setResult(r);
          });
  connect(w, &app::InspectorWorker::fetched, this, [this](quint64, quint64 done, quint64 total) {
    if (!checkpoint() || checkpoint()->host.isEmpty()) return;
    fetched_->setText(tr("Over SSH from %1: %2 of %3 fetched")
                          .arg(checkpoint()->host, formatBytes(static_cast<std::int64_t>(done)),
                               formatBytes(static_cast<std::int64_t>(total))));
  });
}

app::InspectorWorker* CheckpointInspector::worker() const {
  return thread_->worker();
}

const app::CheckpointModelPtr& CheckpointInspector::checkpoint() const {
  return model_->checkpoint();
}

quint64 CheckpointInspector::post(std::function<void(app::InspectorWorker*, quint64)> request) {
  app::InspectorWorker* w = thread_->worker();
  const quint64 ticket = w->newTicket();
  QMetaObject::invokeMethod(w, [w, ticket, request = std::move(request)] { request(w, ticket); });
  return ticket;
}

void CheckpointInspector::openPath(const QString& path) {
  openingRemote_ = false;
  status_->setVisible(false);
  path_->setText(tr("Opening %1\u2026").arg(path));
  openTicket_ = post([path](app::InspectorWorker* w, quint64 t) { w->open(t, path); });
}

void CheckpointInspector::openRemote(const std::shared_ptr<app::remote::Host>& host, const QString& path) {
  const QString name =
      host ? QString::fromStdString(host->name()) : (checkpoint() ? checkpoint()->host : QString());
  openRemote(
      name, [host]() -> protocol::StatusOr<std::shared_ptr<app::remote::Host>> { return host; }, path);
}

void CheckpointInspector::openRemote(const QString& hostName, HostOpen openHost, const QString& path) {
  openingRemote_ = true;
  status_->setVisible(false);
  path_->setText(tr("Opening %1:%2 over SSH\u2026").arg(hostName, path));
  openTicket_ = post([openHost = std::move(openHost), path](app::InspectorWorker* w, quint64 t) {
    auto host = openHost();  // blocks (SSH connect): here, on the worker's thread
    if (!host.isOk()) {
      emit w->failed(t, app::InspectorTask::kOpen, QString::fromStdString(host.status().message()), false);
      return;
    }
    w->openRemote(t, host.value(), path);
  });
}

void CheckpointInspector::readTrainingState() {
  if (!checkpoint()) return;
  stateOf_ = checkpoint();
  state_->setRunning(tr("Reading the training state of %1\u2026").arg(checkpoint()->path));
  stateTicket_ = post([](app::InspectorWorker* w, quint64 t) { w->trainingState(t); });
}

void CheckpointInspector::onTabChanged() {
  if (tabs_->currentWidget() == state_ && checkpoint() && stateOf_ != checkpoint()) readTrainingState();
}

void CheckpointInspector::compareWith(const QString& otherPath) {
  if (!checkpoint()) return showError(tr("Open a checkpoint first, then compare it with another."));
  tabs_->setCurrentWidget(diff_);
  diff_->setMessage(tr("Comparing %1 with %2\u2026").arg(checkpoint()->path, otherPath));
  setBusy(tr("diff"));
  diffTicket_ = post([otherPath](app::InspectorWorker* w, quint64 t) { w->diff(t, otherPath); });
}

void CheckpointInspector::computeStats() {
  const QModelIndex current = tree_->currentIndex();
  if (!checkpoint() || !current.isValid()) return;
  const app::StatsTarget target = model_->targetAt(current);
  stats_->setRunning(true);
  statsTicket_ = post([target](app::InspectorWorker* w, quint64 t) { w->stats(t, target); });
  statsRunning_ = statsTicket_;
}

void CheckpointInspector::verifyHashes() {
  if (!checkpoint()) return;
  setBusy(tr("hash check"));
  hashTicket_ = post([](app::InspectorWorker* w, quint64 t) { w->verifyHashes(t); });
}

void CheckpointInspector::cancel() {
  thread_->worker()->cancel();
}

void CheckpointInspector::onOpened(quint64 ticket, const app::CheckpointModelPtr& model) {
  if (ticket != openTicket_) return;
  lastStats_.reset();
  model_->setCheckpoint(model);
  const QString files = model->files.size() == 1 ? tr("1 file") : tr("%1 files").arg(model->files.size());
  path_->setText(tr("<b>%1</b><br>%2, %3, %4")
                     .arg(model->path.toHtmlEscaped(), model->format, files,
                          formatBytes(static_cast<std::int64_t>(model->fileBytes))));
  hashButton_->setEnabled(model->hasManifest);
  hashButton_->setText(tr("Verify hashes"));
  fetched_->setVisible(!model->host.isEmpty());
  if (model->host.isEmpty()) fetched_->clear();
  stateTicket_ = 0;
  stateOf_.reset();
  state_->setMessage(tr("The training state of %1 is read when this tab is shown.").arg(model->path), true);
  onTabChanged();
  if (!model->warnings.isEmpty()) showError(model->warnings.join(QLatin1Char('\n')));
  for (int r = 0; r < model_->rowCount(); ++r) tree_->expand(model_->index(r, 0));
  tree_->resizeColumnToContents(ModuleTreeModel::kName);
  stats_->setTarget(tr("Select a tensor or module"), false);
  fillingPicker_ = true;
  for (int i = 0; i < picker_->count(); ++i) {
    const QString item = picker_->itemData(i).toString();
    if (item == model->path || model->path.endsWith(QLatin1Char(':') + item)) picker_->setCurrentIndex(i);
  }
  fillingPicker_ = false;
  emit opened(model->path);
}

void CheckpointInspector::onRunListed(quint64 ticket, const app::CheckpointListing& listing) {
  if (ticket != openTicket_) return;
  fillingPicker_ = true;
  picker_->clear();
  for (const app::CheckpointOnDisk& c : listing.checkpoints) {
    picker_->addItem(c.isComplete() ? c.name : tr("%1 (incomplete)").arg(c.name), c.path);
  }
  picker_->setVisible(picker_->count() > 1);
  pickerRemote_ = openingRemote_;
  fillingPicker_ = false;
}

void CheckpointInspector::onProgress(quint64 ticket, app::InspectorTask task, quint64 done, quint64 total) {
  if (task == app::InspectorTask::kStats && ticket == statsTicket_) {
    stats_->setProgress(done, total);
  } else if (task == app::InspectorTask::kTrainingState && ticket == stateTicket_) {
    state_->setProgress(done, total);
  } else if ((task == app::InspectorTask::kHashes && ticket == hashTicket_) ||
             (task == app::InspectorTask::kDiff && ticket == diffTicket_)) {
    busy_->setValue(total == 0 ? 0 : static_cast<int>(done * 1000 / total));
  }
}

void CheckpointInspector::onFailed(quint64 ticket, app::InspectorTask task, const QString& message,
                                   bool cancelled) {
  using app::InspectorTask;
  if (task == InspectorTask::kStats && ticket == statsRunning_) statsRunning_ = 0;
  if (task == InspectorTask::kStats && ticket == statsTicket_) {
    stats_->setMessage(cancelled ? tr("Cancelled.") : message);
    if (!cancelled) emit failed(message);
    return;
  }
  if (task == InspectorTask::kTrainingState) {
    if (ticket != stateTicket_) return;
    state_->setMessage(cancelled ? tr("Cancelled.") : message, true);
    if (!cancelled) emit failed(message);
    return;
  }
  if ((task == InspectorTask::kHashes && ticket == hashTicket_) ||
      (task == InspectorTask::kDiff && ticket == diffTicket_)) {
    setBusy({});
    if (task == InspectorTask::kDiff) diff_->setMessage(cancelled ? tr("Cancelled.") : message);
  }
  if ((task == InspectorTask::kOpen || task == InspectorTask::kListRun) && ticket == openTicket_) {
    path_->setText(checkpoint() ? checkpoint()->path : tr("No checkpoint open."));
  } else if (task != InspectorTask::kHashes && task != InspectorTask::kDiff) {
    return;  // superseded
  }
  if (!cancelled) {
    showError(message);
    emit failed(message);
  }
}

void CheckpointInspector::onSelectionChanged() {
  const QModelIndex current = tree_->currentIndex();
  if (!current.isValid() || !checkpoint()) return;
  const app::StatsTarget target = model_->targetAt(current);
  // A run for the last selection is not shown any more: stop it, unless a hash
  // check or diff is going too (cancel stops every request so far).
  if (statsRunning_ != 0 && !busy_->isVisible() && state_->progressBar()->isHidden())
    thread_->worker()->cancel();
  statsTicket_ = 0;
  stats_->setRunning(false);
  stats_->setTarget(target.label(*checkpoint()), true);
  if (target.tensor) computeStats();
}

void CheckpointInspector::setBusy(const QString& what) {
  busy_->setVisible(!what.isEmpty());
  cancel_->setVisible(!what.isEmpty());
  busy_->setValue(0);
  busy_->setToolTip(what);
  hashButton_->setEnabled(what.isEmpty() && checkpoint() && checkpoint()->hasManifest);
}

void CheckpointInspector::showError(const QString& message) {
  status_->setText(message);
  status_->setVisible(true);
}

void CheckpointInspector::dragEnterEvent(QDragEnterEvent* event) {
  if (!droppedPath(event->mimeData()).isEmpty()) event->acceptProposedAction();
}

void CheckpointInspector::dropEvent(QDropEvent* event) {
  const QString path = droppedPath(event->mimeData());
  if (path.isEmpty()) return;
  event->acceptProposedAction();
  openPath(path);
}

}  // namespace fs::ui
