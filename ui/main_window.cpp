#include "ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDialog>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSplitter>
#include <QStatusBar>
#include <QSystemTrayIcon>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>

#include "app/common/worker_thread.h"
#include "app/config/config_document.h"
#include "app/control/control_client.h"
#include "app/history/history_worker.h"
#include "app/launch/local_launcher.h"
#include "app/launch/ssh/ssh_launcher.h"
#include "app/monitor/host_file_source.h"
#include "app/monitor/run_monitor.h"
#include "app/runs/run_catalog.h"
#include "ui/checkpoints/checkpoint_inspector.h"
#include "ui/compare/compare_page.h"
#include "ui/config/approval_dialog.h"
#include "ui/config/cmdline_dialog.h"
#include "ui/config/config_form.h"
#include "ui/config/defaults_diff_dialog.h"
#include "ui/config/problem_label.h"
#include "ui/control/run_control_bar.h"
#include "ui/history/history_view.h"
#include "ui/monitor/monitor_page.h"
#include "ui/plan/estimate_view.h"
#include "ui/plan/planner_view.h"
#include "ui/remote/connection_indicator.h"
#include "ui/remote/dialog_prompter.h"
#include "ui/remote/host_opener_service.h"
#include "ui/remote/launch_dispatcher.h"
#include "ui/remote/launch_target_page.h"
#include "ui/remote/reattach_offer.h"
#include "ui/remote/remote_run_follow.h"
#include "ui/remote/remote_runs_dialog.h"
#include "ui/remote/slurm_queue_panel.h"
#include "ui/remote/slurm_target_panel.h"
#include "ui/runs/runs_panel.h"

// NOTE [Main window layout]
//   tabs: Configure (ConfigForm on the ConfigDocument | RunsPanel fed by a
//         RunCatalogWorker) | Monitor (MonitorPage on a RunMonitor and a
//         ControlClient) | History (HistoryView on a HistoryWorker) |
//         Compare (ComparePage: the runs History overlays, reference CSVs) |
//         Checkpoints (CheckpointInspector: File > Open checkpoint..., drops on the
//         window, the Monitor's Checkpoints list, History's "Inspect checkpoints";
//         a remote run's over SSH through its Host) |
//         Launch (LaunchTargetPage: this machine / SSH nodes / SLURM cluster,
//         which is launch.kind) | SLURM queue (SlurmQueuePanel)
//   File: Open..., Save YAML, Save YAML As..., Import / Copy OpenFlamingo
//         command line, Show changes from the defaults, Open checkpoint...,
//         Open checkpoint or run directory..., Quit
//   Run:  Launch (the launcher of launch.kind: LaunchDispatcher), Plan memory..., Open run directory...,
//   Detach, Refresh runs Plan memory... (also the config form's button): a PlannerView window on
//         the document's config, following its edits
//   status bar: file, load / save / launch results, error and warning counts,
//         the remote run's connection (ConnectionIndicator)
//
// A launch creates the run directory and the monitor follows it at once (an
// SSH or SLURM run through its Host: RemoteRunFollow); a run activated in the runs panel or the history is
// followed the same way. A followed run goes into the history when it starts and when it ends; a remote
// one is read through the Host its follow opened and listed as host:path. Every file, process and database
// action runs on a worker thread or asynchronously (QProcess); the window only picks paths (QFileDialog) and
// shows results. Alerts (a stalled run, a dead process) raise a desktop notification where the platform has a
// tray.

namespace fs::ui {
namespace {

const QString kYamlFilter = QObject::tr("Run configs (*.yaml *.yml);;All files (*)");
constexpr int kStatusMs = 8000;

}  // namespace

MainWindow::MainWindow(app::ConfigDocument* document, QWidget* parent)
    : QMainWindow(parent),
      document_(document),
      form_(new ConfigForm(document)),
      runs_(new RunsPanel),
      monitor_(new app::RunMonitor(this)),
      control_(new app::ControlClient(this)),
      launcher_(new app::LocalLauncher(app::EngineSearch::fromEnvironment(), this)),
      prompter_(DialogPrompter::create(this)),
      hosts_(HostOpenerService::create(sshHostFactory(prompter_))),
      dispatcher_(new LaunchDispatcher(launcher_, hosts_, this)),
      launchPage_(new LaunchTargetPage(document, hosts_)),
      queue_(new SlurmQueuePanel(hosts_)),
      connection_(new ConnectionIndicator),
      remoteFollow_(new RemoteRunFollow(hosts_, monitor_, connection_, this)),
      reattach_(new ReattachOffer),
      monitorPage_(new MonitorPage(monitor_, control_)),
      historyView_(new HistoryView),
      comparePage_(new ComparePage),
      inspector_(new CheckpointInspector),
      tabs_(new QTabWidget),
      problemCount_(new QLabel),
      catalog_(std::make_unique<app::WorkerThread<app::RunCatalogWorker>>(new app::RunCatalogWorker,
                                                                          QStringLiteral("run-catalog"))),
      history_(std::make_unique<app::WorkerThread<app::HistoryWorker>>(new app::HistoryWorker,
                                                                       QStringLiteral("run-history"))) {
  setObjectName(QStringLiteral("mainWindow"));
  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->addWidget(form_);
  splitter->addWidget(runs_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  splitter->setSizes({760, 520});
  tabs_->addTab(splitter, tr("Configure"));
  tabs_->addTab(monitorPage_, tr("Monitor"));
  tabs_->addTab(historyView_, tr("History"));
  tabs_->addTab(comparePage_, tr("Compare"));
  tabs_->addTab(inspector_, tr("Checkpoints"));
  tabs_->insertTab(1, launchPage_, tr("Launch"));
  tabs_->addTab(queue_, tr("SLURM queue"));
  setCentralWidget(tabs_);
  statusBar()->addWidget(reattach_);
  statusBar()->addPermanentWidget(problemCount_);
  statusBar()->addPermanentWidget(connection_);
  monitorPage_->controlBar()->setLauncher(launcher_);
  if (QSystemTrayIcon::isSystemTrayAvailable()) {
    tray_ = new QSystemTrayIcon(windowIcon(), this);
    tray_->show();
  }
  resize(1280, 820);

  createMenus();
  wireDocument();
  wireRuns();
  wireLaunch();
  wireRemote();
  wireHistory();
  wireCheckpoints();
  updateTitle();
  updateProblemCount();
  followRunRoot();
  reattach_->offerRemembered();
}

MainWindow::~MainWindow() {
  prompter_->shutDown();         // a worker waiting on a dialog gives up before its thread is joined
  catalog_->worker()->cancel();  // so the threads' stop does not wait for a long scan or import
  history_->worker()->cancel();
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open\u2026"), QKeySequence::Open, this, &MainWindow::openConfig);
  file->addAction(tr("&Save YAML"), QKeySequence::Save, this, &MainWindow::saveConfig);
  file->addAction(tr("Save YAML &As\u2026"), QKeySequence::SaveAs, this, &MainWindow::saveConfigAs);
  file->addSeparator();
  file->addAction(tr("&Import OpenFlamingo command line\u2026"), this, [this] {
    auto* dialog = new CmdlineDialog(document_, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->open();
  });
  file->addAction(tr("&Copy as OpenFlamingo command line"), this, &MainWindow::copyCommandLine);
  file->addAction(tr("Show changes from the &defaults\u2026"), this, [this] {
    auto* dialog = new DefaultsDiffDialog(document_, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
  });
  file->addSeparator();
  file->addAction(tr("Open c&heckpoint…"), this, [this] {
    tabs_->setCurrentWidget(inspector_);
    inspector_->chooseFile();
  });
  file->addAction(tr("Open checkpoint or run d&irectory…"), this, [this] {
    tabs_->setCurrentWidget(inspector_);
    inspector_->chooseDirectory();
  });
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  QMenu* runs = menuBar()->addMenu(tr("&Run"));
  QAction* launch =
      runs->addAction(tr("&Launch"), QKeySequence(Qt::CTRL | Qt::Key_R), this, &MainWindow::launch);
  launch->setObjectName(QStringLiteral("launchAction"));
  runs->addAction(tr("Plan &memory\u2026"), this, &MainWindow::openPlanner);
  runs->addAction(tr("&Open run directory\u2026"), this, &MainWindow::openRunDirectory);
  runs->addAction(tr("&Detach"), this, &MainWindow::detachRun);
  runs->addAction(tr("Browse &remote runs\u2026"), this, &MainWindow::openRemoteRuns);
  runs->addSeparator();
  runs->addAction(tr("&Refresh runs"), QKeySequence::Refresh, runs_, &RunsPanel::refresh);
  QToolBar* bar = addToolBar(tr("Run"));
  bar->setObjectName(QStringLiteral("runToolBar"));
  bar->addAction(launch);
}

void MainWindow::wireDocument() {
  using app::ConfigDocument;
  connect(document_, &ConfigDocument::problemsChanged, this, &MainWindow::updateProblemCount);
  connect(form_, &ConfigForm::planRequested, this, &MainWindow::openPlanner);
  connect(document_, &ConfigDocument::modifiedChanged, this, &MainWindow::updateTitle);
  connect(document_, &ConfigDocument::filePathChanged, this, &MainWindow::updateTitle);
  connect(document_, &ConfigDocument::configReset, this, &MainWindow::followRunRoot);
  connect(document_, &ConfigDocument::fieldChanged, this, [this](const QString& path) {
    if (path == QLatin1String("run_root")) followRunRoot();
  });
  connect(document_, &ConfigDocument::loaded, this,
          [this](const QString& path) { statusBar()->showMessage(tr("Opened %1").arg(path), kStatusMs); });
  connect(document_, &ConfigDocument::saved, this,
          [this](const QString& path) { statusBar()->showMessage(tr("Saved %1").arg(path), kStatusMs); });
  // An ssh_config keyword the connection ignored (Match, HostKeyAlias, ...), once per connection; it stays
  // until another message replaces it.
  connect(prompter_.get(), &DialogPrompter::configWarning, this,
          [this](const QString& text) { statusBar()->showMessage(tr("SSH config: %1").arg(text)); });
  auto showError = [this](const QString& title, const QString& message) {
    statusBar()->showMessage(title, kStatusMs);
    auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();  // window-modal, does not block the event loop
  };
  connect(document_, &ConfigDocument::loadFailed, this,
          [showError](const QString& path, const QString& message) {
            showError(QObject::tr("Could not open %1").arg(path), message);
          });
  connect(document_, &ConfigDocument::saveFailed, this,
          [showError](const QString& path, const QString& message) {
            showError(QObject::tr("Could not save %1").arg(path), message);
          });
}

void MainWindow::wireRuns() {
  // Cross-thread: the request is queued to the worker, the result queued back.
  connect(runs_, &RunsPanel::scanRequested, catalog_->worker(), &app::RunCatalogWorker::scan);
  connect(catalog_->worker(), &app::RunCatalogWorker::scanned, runs_, &RunsPanel::setScan);
  connect(runs_, &RunsPanel::runActivated, this, &MainWindow::followRun);
}

void MainWindow::wireLaunch() {
  using app::Launcher;
  connect(launcher_, &Launcher::runDirectoryReady, this, &MainWindow::followRun);
  connect(launcher_, &Launcher::started, this, [this](const QString& runDir, const QString& pid) {
    statusBar()->showMessage(tr("Started flamingo-train (pid %1) in %2").arg(pid, runDir), kStatusMs);
    runs_->refresh();
  });
  connect(launcher_, &Launcher::failed, this, [this](const QString& message) {
    statusBar()->showMessage(tr("Launch failed"), kStatusMs);
    notify(tr("Launch failed"), message);
  });
  connect(launcher_, &Launcher::finished, this, [this](int code, app::ExitKind how) {
    statusBar()->showMessage(app::describeExit(code, how), kStatusMs);
    importFollowedIntoHistory();
  });
  connect(monitorPage_, &MonitorPage::alert, this, &MainWindow::notify);
  connect(monitor_, &app::RunMonitor::runFinished, this, &MainWindow::importFollowedIntoHistory);
  connect(monitor_, &app::RunMonitor::runStarted, this, &MainWindow::importFollowedIntoHistory);
}

void MainWindow::wireRemote() {
  using app::Launcher;
  auto* ssh = dispatcher_->sshLauncher();
  // An SSH run is followed through node 0's Host (its launch.json names it).
  connect(ssh, &Launcher::runDirectoryReady, this, [this, ssh](const QString& runDir) {
    const auto& nodes = ssh->record().nodes;
    remoteFollow_->follow(
        nodes.empty() ? QStringLiteral("local") : QString::fromStdString(nodes.front().host), runDir);
  });
  connect(ssh, &app::cluster::SshLauncher::progress, this,
          [this](const QString& message) { statusBar()->showMessage(message, kStatusMs); });
  connect(ssh, &Launcher::started, this, [this](const QString& runDir, const QString& ids) {
    statusBar()->showMessage(tr("Started node agents %1 in %2").arg(ids, runDir), kStatusMs);
  });
  connect(ssh, &Launcher::failed, this, [this](const QString& message) {
    statusBar()->showMessage(tr("Launch failed"), kStatusMs);
    notify(tr("Launch failed"), message);
  });
  connect(ssh, &Launcher::finished, this, [this](int code, app::ExitKind how) {
    statusBar()->showMessage(app::describeExit(code, how), kStatusMs);
  });
  // A SLURM job: the queue panel follows it, the monitor its run directory (on the login host).
  connect(launchPage_, &LaunchTargetPage::slurmSubmitted, this,
          [this](const QString& host, const QString& jobId, const QString& runDir) {
            queue_->watch(host, jobId);
            statusBar()->showMessage(tr("Submitted SLURM job %1 on %2").arg(jobId, host), kStatusMs);
            if (host == QLatin1String("local"))
              followRun(runDir);
            else
              remoteFollow_->follow(host, runDir);
          });
  connect(launchPage_->slurmPanel(), &SlurmTargetPanel::submitFailed, this,
          [this](const QString& message) { notify(tr("SLURM submit failed"), message); });
  // The script carries --allow-pipe when the config has pipe: commands; Submit asks first, and
  // about launch.slurm.extra_args from elsewhere too (NOTE [SLURM extra args]).
  launchPage_->slurmPanel()->setSubmitGate([this] {
    bool allowPipe = false;
    return approveLaunch(document_->config(), app::LaunchApprovals::Scope::kSlurmSubmit, &allowPipe);
  });
  connect(queue_, &SlurmQueuePanel::message, this,
          [this](const QString& message) { statusBar()->showMessage(message, kStatusMs); });
  connect(remoteFollow_, &RemoteRunFollow::attached, this,
          [this](const QString& host, const QString& runDir, const std::shared_ptr<app::remote::Host>& open) {
            control_->setRunDir(runDir, open);  // control files are written on that host
            followingHost_ = host;
            followingDir_ = runDir;
            followingOpen_ = open;
            monitorPage_->runAttached(host + QLatin1Char(':') + runDir);
            tabs_->setCurrentWidget(monitorPage_);
          });
  connect(remoteFollow_, &RemoteRunFollow::failed, this,
          [this](const QString& message) { notify(tr("Cannot follow the remote run"), message); });
  connect(reattach_, &ReattachOffer::reattachRequested, remoteFollow_, &RemoteRunFollow::follow);
}

void MainWindow::wireCheckpoints() {
  acceptCheckpointDrops(this, [this](const QString& path) { inspectCheckpoint(path); });
  connect(monitorPage_, &MonitorPage::inspectCheckpoint, this, [this](const QString& path) {
    if (followingHost_.isEmpty()) return inspectCheckpoint(path);
    // A remote run's checkpoint: over SSH through the Host the follow opened (its index and
    // the tensors read only).
    if (!followingOpen_) {
      statusBar()->showMessage(tr("%1 is on %2, which is not connected").arg(path, followingHost_),
                               kStatusMs);
      return;
    }
    // The list names it "host:/path" (RunCheckpointList::pathOf), or "/path" when the event's was absolute.
    const QString prefix = followingHost_ + QLatin1Char(':');
    tabs_->setCurrentWidget(inspector_);
    inspector_->openRemote(followingOpen_, path.startsWith(prefix) ? path.mid(prefix.size()) : path);
  });
  connect(historyView_, &HistoryView::inspectCheckpoints, this, &MainWindow::inspectCheckpoint);
  connect(historyView_, &HistoryView::inspectRemoteCheckpoints, this,
          [this](const QString& location, const QString& runDir) {
            tabs_->setCurrentWidget(inspector_);
            std::shared_ptr<HostOpenerService> hosts = hosts_;
            const std::string name = location.toStdString();
            inspector_->openRemote(
                location, [hosts, name] { return hosts->open(name); }, runDir);
          });
  connect(inspector_, &CheckpointInspector::failed, this,
          [this](const QString& message) { statusBar()->showMessage(message, kStatusMs); });
}

void MainWindow::inspectCheckpoint(const QString& path) {
  tabs_->setCurrentWidget(inspector_);
  inspector_->openPath(path);
}

void MainWindow::wireHistory() {
  connectHistoryView(historyView_, history_->worker());
  connect(historyView_, &HistoryView::openRun, this, &MainWindow::followRun);
  // A remote row is followed again through its host (opened on RemoteRunFollow's worker).
  connect(historyView_, &HistoryView::openRemoteRun, remoteFollow_, &RemoteRunFollow::follow);
  connect(historyView_, &HistoryView::overlayRuns, this, [this](const QStringList& dirs) {
    comparePage_->setRuns(dirs);
    tabs_->setCurrentWidget(comparePage_);
  });
  connect(comparePage_, &ComparePage::importReferenceRequested, this, [this](const QString& path) {
    auto* worker = history_->worker();
    QMetaObject::invokeMethod(worker, [worker, path] { worker->importReferenceCurves(path, {}); });
  });
  connect(history_->worker(), &app::HistoryWorker::referenceCurves, this,
          [this](const app::ReferenceCurveImport& result) {
            if (!result.error.isEmpty()) {
              notify(tr("Could not import %1").arg(result.path), result.error);
              return;
            }
            comparePage_->addReferenceCurves(result.curves);
          });
  connect(history_->worker(), &app::HistoryWorker::failed, this,
          [this](const QString& operation, const QString& message) {
            statusBar()->showMessage(tr("History (%1): %2").arg(operation, message), kStatusMs);
          });
  auto* worker = history_->worker();
  QMetaObject::invokeMethod(worker, [worker] { worker->open(QString()); });
}

void MainWindow::copyCommandLine() {
  const CmdlineCopy copy = commandLineFor(document_->config());
  QApplication::clipboard()->setText(copy.line);
  if (copy.notExpressible.isEmpty()) {
    statusBar()->showMessage(tr("Copied the torchrun command line"), kStatusMs);
  } else {
    notify(tr("Copied, but the command line cannot carry everything"), copy.notExpressible);
  }
}

void MainWindow::launch() {
  if (document_->errorCount() > 0) {
    tabs_->setCurrentIndex(0);
    statusBar()->showMessage(tr("The config has errors: fix them before launching"), kStatusMs);
    return;
  }
  if (document_->config().launch.kind == "slurm") {
    tabs_->setCurrentWidget(launchPage_);
    launchPage_->slurmPanel()->submit();
    return;
  }
  app::LaunchRequest request = launchPage_->request(runRootPath());
  if (!approveLaunch(request.config, app::LaunchApprovals::Scope::kLaunch, &request.allowPipe)) {
    statusBar()->showMessage(tr("Launch cancelled: the shell commands were not approved"), kStatusMs);
    return;
  }
  if (const QString why = dispatcher_->launch(request); !why.isEmpty()) {
    tabs_->setCurrentWidget(launchPage_);
    statusBar()->showMessage(why, kStatusMs);
    return;
  }
  monitorPage_->controlBar()->setLauncher(dispatcher_->launcherFor(request.config.launch.kind));
  statusBar()->showMessage(tr("Launching %1 (%2)\u2026")
                               .arg(QString::fromStdString(request.config.name),
                                    QString::fromStdString(request.config.launch.kind)),
                           kStatusMs);
}

bool MainWindow::approveLaunch(const protocol::RunConfig& config, app::LaunchApprovals::Scope scope,
                               bool* allowPipe) {
  app::LaunchApprovals approvals;  // the user's settings store, opened by the app
  return confirmLaunch(this, approvals, config, document_->typedPipeSources(), document_->typedSlurmArgs(),
                       scope, allowPipe);
}

PlannerView* MainWindow::plannerView() const {
  return planner_.data();
}

void MainWindow::openPlanner() {
  if (!planner_) {
    auto* dialog = new QDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(tr("Memory plan"));
    planner_ = new PlannerView(launcher_->engineSearch());
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(planner_);
    dialog->resize(1100, 700);
    // The plan follows the form: every edit re-plans (debounced in the view).
    auto follow = [this] {
      if (planner_) planner_->setConfig(document_->config());
    };
    connect(document_, &app::ConfigDocument::fieldChanged, planner_, follow);
    connect(document_, &app::ConfigDocument::datasetsChanged, planner_, follow);
    connect(document_, &app::ConfigDocument::configReset, planner_, follow);
    // The fit's Apply: its KEY=VALUE assignments into the config being edited.
    connect(planner_, &PlannerView::applyFit, this, [this](const QStringList& assignments) {
      QStringList failed;
      for (const auto& a : assignments) {
        const auto at = a.indexOf(QLatin1Char('='));
        const auto s = document_->setField(a.left(at).toStdString(), a.mid(at + 1).toStdString());
        if (!s) failed << QString::fromStdString(s.message());
      }
      // The choice sets the node count, not the nodes (NOTE [Fit writes a valid config]
      // in backend/cli/cmd_plan_fit.cpp): say what the config now lacks, e.g. SSH hosts.
      QStringList broken;
      for (const auto& p : document_->problems())
        if (p.isError()) broken << QString::fromStdString(p.path + ": " + p.message);
      QString message = failed.isEmpty()
                            ? tr("Applied the fit's choice to the config")
                            : tr("Fit not fully applied: %1").arg(failed.join(QStringLiteral("; ")));
      if (!broken.isEmpty())
        message += tr("; the config now needs: %1").arg(broken.join(QStringLiteral("; ")));
      statusBar()->showMessage(message, kStatusMs);
    });
  }
  planner_->setConfig(document_->config());
  planner_->replan();
  planner_->window()->show();
  planner_->window()->raise();
}

void MainWindow::followRun(const QString& runDir) {
  monitorPage_->estimateView()->setEngineSearch(launcher_->engineSearch());
  remoteFollow_->followingLocal();
  followingHost_.clear();
  followingDir_.clear();
  followingOpen_.reset();
  monitor_->attach(runDir);
  control_->setRunDir(runDir);
  monitorPage_->runAttached(runDir);
  tabs_->setCurrentWidget(monitorPage_);
}

void MainWindow::detachRun() {
  monitor_->detach();
  statusBar()->showMessage(tr("Detached; the run goes on"), kStatusMs);
}

RemoteRunsDialog* MainWindow::openRemoteRuns() {
  if (!remoteRuns_) {
    remoteRuns_ = new RemoteRunsDialog(hosts_, this);
    remoteRuns_->setAttribute(Qt::WA_DeleteOnClose);
    connect(remoteRuns_, &RemoteRunsDialog::attachRequested, remoteFollow_, &RemoteRunFollow::follow);
    connect(remoteRuns_, &RemoteRunsDialog::addToHistoryRequested, this, &MainWindow::addRemoteRunToHistory);
  }
  remoteRuns_->show();
  remoteRuns_->raise();
  return remoteRuns_;
}

void MainWindow::openRunDirectory() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Open run directory"), runRootPath());
  if (!dir.isEmpty()) followRun(dir);
}

void MainWindow::notify(const QString& title, const QString& message) {
  statusBar()->showMessage(title + QStringLiteral(": ") + message, kStatusMs);
  if (tray_) tray_->showMessage(title, message, QSystemTrayIcon::Warning);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  // A run launched from here would die with its QProcess: stop it gracefully
  // (checkpoint first) and close once it has exited.
  if (launcher_->isActive()) {
    statusBar()->showMessage(tr("Stopping the run (checkpoint first) before closing\u2026"));
    connect(launcher_, &app::Launcher::finished, this, &QWidget::close, Qt::UniqueConnection);
    launcher_->terminate();
    event->ignore();
    return;
  }
  // A live remote run goes on without us: offer it again on the next start.
  const auto& state = monitor_->status().state;
  const bool live =
      monitor_->isAttached() && !followingHost_.isEmpty() && state &&
      ReattachOffer::isLiveState(QString::fromStdString(std::string(protocol::toString(*state))));
  ReattachOffer::remember(live ? std::optional<RemoteRunRef>(RemoteRunRef{followingHost_, followingDir_})
                               : std::nullopt);
  event->accept();
}

void MainWindow::openConfig() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open run config"),
                                                    QFileInfo(document_->filePath()).path(), kYamlFilter);
  if (!path.isEmpty()) document_->loadFile(path);
}

void MainWindow::saveConfig() {
  if (document_->filePath().isEmpty())
    saveConfigAs();
  else
    document_->saveFile(document_->filePath());
}

void MainWindow::saveConfigAs() {
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save run config"), document_->filePath(), kYamlFilter);
  if (!path.isEmpty()) document_->saveFile(path);
}

void MainWindow::updateTitle() {
  const QString file =
      document_->filePath().isEmpty() ? tr("untitled") : QFileInfo(document_->filePath()).fileName();
  setWindowTitle(QStringLiteral("%1%2 \u2014 Flamingo Studio").arg(file, document_->isModified() ? "*" : ""));
}

void MainWindow::updateProblemCount() {
  const int errors = document_->errorCount();
  const int warnings = document_->warningCount();
  if (errors == 0 && warnings == 0) {
    problemCount_->setText(tr("Config valid"));
    return;
  }
  problemCount_->setText(
      tr("<span style=\"color:%1\">%2 error(s)</span>, <span style=\"color:%3\">%4 warning(s)</span>")
          .arg(QLatin1String(kErrorColor))
          .arg(errors)
          .arg(QLatin1String(kWarningColor))
          .arg(warnings));
}

void MainWindow::importFollowedIntoHistory() {
  auto* worker = history_->worker();
  if (followingHost_.isEmpty()) {
    const QString runDir = monitor_->runDir();
    if (runDir.isEmpty()) return;
    QMetaObject::invokeMethod(worker, [worker, runDir] { worker->importRunDirs({runDir}); });
    return;
  }
  // A remote run: read on the history thread through the Host the follow opened
  // (SFTP), recorded with the host it was reached through.
  if (!followingOpen_ || followingDir_.isEmpty()) return;
  auto source = app::hostRunDir(followingOpen_, followingDir_.toStdString());
  const QString dir = followingDir_;
  const QString location = followingHost_;
  QMetaObject::invokeMethod(
      worker, [worker, source, dir, location] { worker->importRunDirFrom(source, dir, location); });
}

void MainWindow::addRemoteRunToHistory(const QString& host, const QString& runDir) {
  // Opened (usually already open: the listing did) and read on the history thread.
  auto* worker = history_->worker();
  std::shared_ptr<HostOpenerService> hosts = hosts_;
  QMetaObject::invokeMethod(worker, [worker, hosts, host, runDir] {
    auto open = hosts->open(host.toStdString());
    if (!open.isOk()) {
      emit worker->importFailed(host + QLatin1Char(':') + runDir,
                                QString::fromStdString(open.status().message()), false);
      return;
    }
    worker->importRunDirFrom(app::hostRunDir(open.value(), runDir.toStdString()), runDir, host);
  });
}

QString MainWindow::runRootPath() const {
  // Relative run roots are relative to the working directory, as for flamingo-train.
  return QDir::cleanPath(
      QDir::current().absoluteFilePath(QString::fromStdString(document_->config().run_root)));
}

void MainWindow::followRunRoot() {
  runs_->setRoot(runRootPath());
}

}  // namespace fs::ui
