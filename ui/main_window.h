// MainWindow: wires the views together; holds no logic of its own.
//
// See NOTE [Main window layout] in main_window.cpp.
//
// Ownership: does not own the document, which must outlive the window.
// Thread-safety: GUI thread only.
#pragma once

#include <QMainWindow>
#include <QPointer>
#include <memory>

#include "app/config/launch_approval.h"

class QLabel;
class QSystemTrayIcon;
class QTabWidget;

namespace fs::app {
class ConfigDocument;
class ControlClient;
class HistoryWorker;
class LocalLauncher;
class RunCatalogWorker;
class RunMonitor;
template <class Worker>
class WorkerThread;
namespace remote {
class Host;
}
}  // namespace fs::app

namespace fs::ui {

class CheckpointInspector;
class ComparePage;
class ConfigForm;
class HistoryView;
class MonitorPage;
class PlannerView;
class RunsPanel;
class ConnectionIndicator;
class DialogPrompter;
class HostOpenerService;
class LaunchDispatcher;
class LaunchTargetPage;
class RemoteRunFollow;
class RemoteRunsDialog;
class ReattachOffer;
class SlurmQueuePanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(app::ConfigDocument* document, QWidget* parent = nullptr);
  ~MainWindow() override;

  ConfigForm* configForm() const { return form_; }
  RunsPanel* runsPanel() const { return runs_; }
  MonitorPage* monitorPage() const { return monitorPage_; }
  HistoryView* historyView() const { return historyView_; }
  ComparePage* comparePage() const { return comparePage_; }
  CheckpointInspector* checkpointInspector() const { return inspector_; }
  QTabWidget* tabs() const { return tabs_; }
  app::LocalLauncher* launcher() const { return launcher_; }
  LaunchTargetPage* launchTargetPage() const { return launchPage_; }
  SlurmQueuePanel* slurmQueuePanel() const { return queue_; }
  LaunchDispatcher* launchDispatcher() const { return dispatcher_; }
  ConnectionIndicator* connectionIndicator() const { return connection_; }
  // The hosts the window opens; NOTE [SSH host factory] in ui/remote/host_opener_service.h.
  const std::shared_ptr<HostOpenerService>& hosts() const { return hosts_; }
  app::RunMonitor* monitor() const { return monitor_; }
  RemoteRunFollow* remoteRunFollow() const { return remoteFollow_; }
  // The bar offering to re-attach the remote run followed when the window last closed.
  ReattachOffer* reattachOffer() const { return reattach_; }
  // The open planner window's view; nullptr when none is open.
  PlannerView* plannerView() const;

 public slots:
  // Starts the document's config with the launcher of its launch.kind (local,
  // ssh; slurm: the Launch tab's script is submitted) and follows the run.
  void launch();
  // Opens (or raises) the memory planner on the document's config.
  void openPlanner();
  // The config as an OpenFlamingo torchrun line, to the clipboard.
  void copyCommandLine();
  // Follows an existing run directory (also one started from a terminal).
  void followRun(const QString& runDir);
  void detachRun();
  // Opens (or raises) the remote runs browser; its Attach follows through RemoteRunFollow,
  // its Add to History records the run (addRemoteRunToHistory).
  RemoteRunsDialog* openRemoteRuns();
  // Records `runDir` on `host` in the history, read there through the host (SFTP),
  // on the history thread; failures reach the History tab's status line.
  void addRemoteRunToHistory(const QString& host, const QString& runDir);
  // Shows the Checkpoints tab on `path`: a checkpoint file or directory, or a run directory.
  void inspectCheckpoint(const QString& path);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void createMenus();
  void wireDocument();
  void wireRuns();
  void wireLaunch();
  void wireRemote();
  void wireHistory();
  void wireCheckpoints();
  // NOTE [Pipe approval]: one check of `config`, the dialog when something must be asked, the
  // answer stored. False: cancelled, do not launch; true with *allowPipe when it has pipe: sources.
  bool approveLaunch(const protocol::RunConfig& config, app::LaunchApprovals::Scope scope, bool* allowPipe);
  void openConfig();
  void saveConfig();
  void saveConfigAs();
  void openRunDirectory();
  void updateTitle();
  void updateProblemCount();
  void followRunRoot();
  void notify(const QString& title, const QString& message);
  QString runRootPath() const;
  // The run the monitor follows (local, or through followingOpen_), into the history.
  void importFollowedIntoHistory();

  app::ConfigDocument* document_;
  ConfigForm* form_;
  RunsPanel* runs_;
  app::RunMonitor* monitor_;
  app::ControlClient* control_;
  app::LocalLauncher* launcher_;
  std::shared_ptr<DialogPrompter> prompter_;  // before hosts_: their SSH factory asks it
  std::shared_ptr<HostOpenerService> hosts_;
  LaunchDispatcher* dispatcher_;
  LaunchTargetPage* launchPage_;
  SlurmQueuePanel* queue_;
  ConnectionIndicator* connection_;
  RemoteRunFollow* remoteFollow_;
  ReattachOffer* reattach_;
  QPointer<RemoteRunsDialog> remoteRuns_;
  QString followingHost_;  // the remote run followed (empty: a local one or none)
  QString followingDir_;
  std::shared_ptr<app::remote::Host> followingOpen_;  // its Host, as RemoteRunFollow opened it
  MonitorPage* monitorPage_;
  HistoryView* historyView_;
  ComparePage* comparePage_;
  CheckpointInspector* inspector_;
  QTabWidget* tabs_;
  QLabel* problemCount_;
  QSystemTrayIcon* tray_ = nullptr;
  QPointer<PlannerView> planner_;
  std::unique_ptr<app::WorkerThread<app::RunCatalogWorker>> catalog_;
  std::unique_ptr<app::WorkerThread<app::HistoryWorker>> history_;
};

}  // namespace fs::ui
