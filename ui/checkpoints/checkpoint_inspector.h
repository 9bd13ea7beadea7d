// CheckpointInspector: one checkpoint, inspected without loading it — its
// module tree (ModuleTreeModel), statistics of a tensor or subtree
// (StatsPanel), manifest hash check, a diff against a second checkpoint
// (DiffView), and its training state (TrainingStateView, read when its tab
// is first shown). A checkpoint on another host opens through its Host
// (openRemote): only its index and the tensors read are fetched.
//
// All file work is done by an InspectorWorker on its own WorkerThread;
// answers to superseded requests are dropped (tickets). Opening takes a
// checkpoint file or directory, or a run directory (its newest checkpoint
// opens; the others are offered in a picker). Drops of a local file or
// directory open it. NOTE [Inspector layout] in checkpoint_inspector.cpp.
//
// Ownership: owns its worker thread. Thread-safety: GUI thread only.
#pragma once

#include <QWidget>
#include <functional>
#include <memory>

#include "app/checkpoints/inspector_results.h"
#include "app/remote/remote_host.h"

class QComboBox;
class QLabel;
class QMimeData;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTreeView;

namespace fs::app {
class InspectorWorker;
template <class Worker>
class WorkerThread;
}  // namespace fs::app

namespace fs::ui {

class DiffView;
class ModuleTreeModel;
class StatsPanel;
class TrainingStateView;

class CheckpointInspector : public QWidget {
  Q_OBJECT
 public:
  explicit CheckpointInspector(QWidget* parent = nullptr);
  ~CheckpointInspector() override;

  // A checkpoint file or directory, or a run directory.
  void openPath(const QString& path);
  // A checkpoint file or directory, or a run directory, `path` on `host` (its
  // title: "host:/path"); null `host`: the host of the last remote open.
  void openRemote(const std::shared_ptr<fs::app::remote::Host>& host, const QString& path);
  // The same on the host `openHost` opens (called on the worker's thread: it may block).
  using HostOpen = std::function<fs::protocol::StatusOr<std::shared_ptr<fs::app::remote::Host>>()>;
  void openRemote(const QString& hostName, HostOpen openHost, const QString& path);
  // Diffs the open checkpoint (A) against `otherPath` (B) and shows the Diff tab.
  void compareWith(const QString& otherPath);
  // Statistics of the selected tensor or subtree.
  void computeStats();
  void verifyHashes();
  // Stops what runs (statistics, hash check, diff).
  void cancel();
  // Dialogs (QFileDialog): a checkpoint file, a directory, B of a diff.
  void chooseFile();
  void chooseDirectory();
  void chooseComparison();

  // Reads the open checkpoint's training state into the Training state tab.
  void readTrainingState();

  const fs::app::CheckpointModelPtr& checkpoint() const;
  QTreeView* tree() const { return tree_; }
  ModuleTreeModel* treeModel() const { return model_; }
  StatsPanel* statsPanel() const { return stats_; }
  DiffView* diffView() const { return diff_; }
  TrainingStateView* trainingStateView() const { return state_; }
  QTabWidget* tabs() const { return tabs_; }
  QComboBox* runPicker() const { return picker_; }
  QPushButton* hashButton() const { return hashButton_; }
  QLabel* statusLabel() const { return status_; }
  QLabel* fetchedLabel() const { return fetched_; }  // a remote checkpoint's bytes fetched
  fs::app::InspectorWorker* worker() const;
  // The last StatsResult shown (for tests and the screenshot tool).
  const std::optional<fs::app::StatsResult>& lastStats() const { return lastStats_; }

  // Whether `mime` carries a local file or directory, and its path.
  static QString droppedPath(const QMimeData* mime);

 signals:
  void opened(const QString& path);
  void failed(const QString& message);

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  QWidget* buildHeader();
  void wireWorker();
  quint64 post(std::function<void(fs::app::InspectorWorker*, quint64)> request);
  void onOpened(quint64 ticket, const fs::app::CheckpointModelPtr& model);
  void onRunListed(quint64 ticket, const fs::app::CheckpointListing& listing);
  void onProgress(quint64 ticket, fs::app::InspectorTask task, quint64 done, quint64 total);
  void onFailed(quint64 ticket, fs::app::InspectorTask task, const QString& message, bool cancelled);
  void onSelectionChanged();
  void onTabChanged();
  void setBusy(const QString& what);  // "" when idle
  void showError(const QString& message);

  std::unique_ptr<fs::app::WorkerThread<fs::app::InspectorWorker>> thread_;
  QLabel* path_;
  QComboBox* picker_;
  QPushButton* hashButton_;
  QProgressBar* busy_;
  QPushButton* cancel_;
  QLabel* status_;
  QTabWidget* tabs_;
  QTreeView* tree_;
  ModuleTreeModel* model_;
  StatsPanel* stats_;
  DiffView* diff_;
  TrainingStateView* state_;
  QLabel* fetched_;
  quint64 openTicket_ = 0, statsTicket_ = 0, hashTicket_ = 0, diffTicket_ = 0, stateTicket_ = 0;
  fs::app::CheckpointModelPtr stateOf_;  // the checkpoint whose training state was asked for
  quint64 statsRunning_ = 0;  // the statistics request not answered yet (shown or superseded); 0: none
  std::optional<fs::app::StatsResult> lastStats_;
  bool fillingPicker_ = false;
  bool openingRemote_ = false;  // the last open asked for was over SSH
  bool pickerRemote_ = false;   // the picker lists a run directory on that host
};

// Lets `target` (e.g. the main window) take drops of a checkpoint file or
// directory, handing the path to `open`. The filter is a child of `target`.
void acceptCheckpointDrops(QWidget* target, std::function<void(const QString& path)> open);

}  // namespace fs::ui
