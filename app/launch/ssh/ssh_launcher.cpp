#include "app/launch/ssh/ssh_launcher.h"

#include <QDateTime>

#include "app/common/worker_thread.h"
#include "app/launch/run_preparation.h"
#include "app/launch/ssh/ssh_launch_worker.h"

namespace fs::app::cluster {

SshLauncher::SshLauncher(HostOpener open, QObject* parent)
    : Launcher(parent),
      worker_(std::make_unique<WorkerThread<SshLaunchWorker>>(new SshLaunchWorker(std::move(open)),
                                                              QStringLiteral("ssh-launch"))) {
  qRegisterMetaType<fs::app::cluster::SshLaunchPlan>();
  qRegisterMetaType<fs::protocol::LaunchRecord>();
  SshLaunchWorker* w = worker_->worker();
  connect(w, &SshLaunchWorker::progress, this, &SshLauncher::progress);
  connect(w, &SshLaunchWorker::warning, this, &SshLauncher::warning);
  connect(w, &SshLaunchWorker::started, this, &SshLauncher::onStarted);
  connect(w, &SshLaunchWorker::failed, this, &SshLauncher::onFailed);
  connect(w, &SshLaunchWorker::finished, this, &SshLauncher::onFinished);
}

// The agents are detached: they go on without us (NOTE [Detached agents]).
SshLauncher::~SshLauncher() {
  worker_->worker()->cancel();
}

void SshLauncher::setPollIntervalMs(int ms) {
  SshLaunchWorker* w = worker_->worker();
  QMetaObject::invokeMethod(
      w, [w, ms] { w->setPollIntervalMs(ms); }, Qt::QueuedConnection);
}

void SshLauncher::launch(const LaunchRequest& request) {
  if (isActive()) {
    emit failed(QStringLiteral("another launch is active (%1); stop it first").arg(launchStateName(state())));
    return;
  }
  setState(LaunchState::kPreparing);
  setRunDir({});
  setProcessId({});
  record_ = {};
  LaunchRequest remote = request;
  remote.runRoot.clear();  // the hosts' run root, not a local folder
  auto resolved = resolveLaunchConfig(remote, false);
  if (!resolved.isOk()) {
    onFailed(resolved.error);
    return;
  }
  if (resolved.config.launch.kind != "ssh") {
    onFailed(QStringLiteral("launch.kind is '%1': the SSH launcher starts only launch.kind=ssh runs")
                 .arg(QString::fromStdString(resolved.config.launch.kind)));
    return;
  }
  SshLaunchPlan plan;
  plan.config = resolved.config;
  plan.allowPipe = request.allowPipe;
  plan.runRoot = !request.runRoot.isEmpty()                   ? request.runRoot.toStdString()
                 : !plan.config.launch.remote_workdir.empty() ? plan.config.launch.remote_workdir
                                                              : std::string("flamingo-runs");
  plan.config.run_root = plan.runRoot;
  plan.runName = (sanitizeRunName(QString::fromStdString(plan.config.name)) + QLatin1Char('-') +
                  QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")))
                     .toStdString();
  plan.engine =
      request.remoteEngine.isEmpty() ? std::string("flamingo-train") : request.remoteEngine.toStdString();
  setState(LaunchState::kStarting);
  QMetaObject::invokeMethod(worker_->worker(), "launch", Qt::QueuedConnection,
                            Q_ARG(fs::app::cluster::SshLaunchPlan, plan));
}

void SshLauncher::terminate() {
  if (!isActive()) return;
  if (state() != LaunchState::kRunning) {
    worker_->worker()->cancel();  // before the agents run: stop the launch itself
    return;
  }
  QMetaObject::invokeMethod(worker_->worker(), "signalAgents", Qt::QueuedConnection,
                            Q_ARG(QString, QStringLiteral("TERM")), Q_ARG(bool, false));
}

void SshLauncher::kill() {
  if (!isActive()) return;
  if (state() != LaunchState::kRunning) {
    worker_->worker()->cancel();
    return;
  }
  QMetaObject::invokeMethod(worker_->worker(), "signalAgents", Qt::QueuedConnection,
                            Q_ARG(QString, QStringLiteral("KILL")), Q_ARG(bool, true));
}

void SshLauncher::onStarted(const protocol::LaunchRecord& record, const QStringList& warnings) {
  record_ = record;
  const QString runDir = QString::fromStdString(record.run_dir);
  setRunDir(runDir);
  QStringList ids;
  for (const auto& n : record.nodes)
    ids << QStringLiteral("%1:%2").arg(QString::fromStdString(n.host)).arg(n.agent_pid);
  setProcessId(ids.join(QLatin1Char(',')));
  emit runDirectoryReady(runDir);
  for (const QString& w : warnings) emit warning(w);
  setState(LaunchState::kRunning);
  emit started(runDir, processId());
}

void SshLauncher::onFailed(const QString& message) {
  setState(LaunchState::kFailed);
  emit failed(message);
}

void SshLauncher::onFinished(int exitCode, bool crashed, const QString& message) {
  emit outputLine(QStringLiteral("[launcher] %1").arg(message), OutputChannel::kStderr);
  setState(LaunchState::kExited);
  emit finished(exitCode, crashed ? ExitKind::kCrashed : ExitKind::kExited);
}

}  // namespace fs::app::cluster
