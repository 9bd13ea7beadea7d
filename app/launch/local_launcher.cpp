#include "app/launch/local_launcher.h"

#include <QMetaObject>
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "app/common/worker_thread.h"
#include "app/launch/launch_file_worker.h"
#include "backend/launch/free_port.h"
#include "backend/protocol/cmdline/shell_words.h"
#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/launch_env.h"

namespace fs::app {
namespace {

// For the log only: the process is started from the argument vector itself.
QString displayCommand(const QString& program, const QStringList& arguments) {
  std::vector<std::string> words{program.toStdString()};
  for (const QString& a : arguments) words.push_back(a.toStdString());
  return QString::fromStdString(protocol::joinShellWords(words));
}

// The request's launch section with its overrides applied; bad overrides are reported by the
// preparation, which runs before anything starts.
protocol::LaunchConfig requestedLaunch(const LaunchRequest& request) {
  protocol::RunConfig c = request.config;
  std::vector<std::string> sets;
  for (const QString& o : request.overrides) sets.push_back(o.toStdString());
  (void)protocol::applyOverrides(&c, sets);
  return c.launch;
}

}  // namespace

int ranksPerNode(const LaunchRequest& request) {
  return static_cast<int>(std::max<int64_t>(1, requestedLaunch(request).nproc_per_node));
}

QProcessEnvironment engineEnvironment(const LaunchRequest& request, QProcessEnvironment base) {
  for (const auto& [name, value] : requestedLaunch(request).env)
    base.insert(QString::fromStdString(name), QString::fromStdString(value));
  return base;
}

QStringList engineArguments(int ranks, int masterPort, const QString& configFile, const QString& runDir,
                            bool allowPipe, int maxRestarts) {
  QStringList train = {QStringLiteral("train"), QStringLiteral("--config"), configFile};
  if (allowPipe) train << QStringLiteral("--allow-pipe");
  if (ranks <= 1 && maxRestarts <= 0) return train + QStringList{QStringLiteral("--run-dir"), runDir};
  QStringList agent = {QStringLiteral("launch"),
                       QStringLiteral("--nproc-per-node"),
                       QString::number(std::max(1, ranks)),
                       QStringLiteral("--master-port"),
                       QString::number(masterPort),
                       QStringLiteral("--run-dir"),
                       runDir};
  if (maxRestarts > 0) agent << QStringLiteral("--max-restarts") << QString::number(maxRestarts);
  return agent + QStringList{QStringLiteral("--")} + train;
}

LocalLauncher::LocalLauncher(EngineSearch search, QObject* parent)
    : LocalLauncher(std::move(search), WallClock{}, parent) {}

LocalLauncher::LocalLauncher(EngineSearch search, WallClock now, QObject* parent)
    : Launcher(parent),
      search_(std::move(search)),
      now_(now ? std::move(now) : WallClock([] { return QDateTime::currentDateTime(); })),
      files_(std::make_unique<WorkerThread<LaunchFileWorker>>(new LaunchFileWorker,
                                                              QStringLiteral("launch-files"))) {
  connect(files_->worker(), &LaunchFileWorker::prepared, this, &LocalLauncher::onPrepared);
  connect(files_->worker(), &LaunchFileWorker::logFailed, this, &Launcher::warning);
}

LocalLauncher::~LocalLauncher() {
  if (process_ != nullptr) {
    // Its last signals must not reach a launcher that is half destroyed;
    // QProcess's destructor then kills and reaps a process that still runs.
    process_->disconnect(this);
    delete process_;
    process_ = nullptr;
  }
  files_->finishPending();  // the log keeps the last lines
}

void LocalLauncher::launch(const LaunchRequest& request) {
  if (isActive()) {
    emit failed(QStringLiteral("a run is already %1 (%2); stop it before launching another")
                    .arg(launchStateName(state()),
                         runDir().isEmpty() ? QStringLiteral("no run directory yet") : runDir()));
    return;
  }
  if (process_ != nullptr) {
    process_->deleteLater();  // the previous launch's, already exited
    process_ = nullptr;
  }
  setRunDir({});
  setProcessId({});
  cancelled_ = false;
  stdout_ = OutputLines();
  stderr_ = OutputLines();
  ranks_ = ranksPerNode(request);
  maxRestarts_ = static_cast<int>(std::max<int64_t>(0, requestedLaunch(request).max_restarts));
  allowPipe_ = request.allowPipe;
  environment_ = engineEnvironment(request);
  launchEnv_ = protocol::launchEnvAssignments(requestedLaunch(request));
  const quint64 ticket = ++ticket_;
  setState(LaunchState::kPreparing);
  LaunchFileWorker* worker = files_->worker();
  QMetaObject::invokeMethod(
      worker,
      [worker, ticket, request, search = search_, now = now_()] {
        worker->prepare(ticket, request, search, now);
      },
      Qt::QueuedConnection);
}

void LocalLauncher::terminate() {
  if (state() == LaunchState::kPreparing) {
    cancelled_ = true;
  } else if (process_ != nullptr && process_->state() != QProcess::NotRunning) {
    log(QStringLiteral("sending SIGTERM (graceful stop: checkpoint, then exit)"));
    process_->terminate();
  }
}

void LocalLauncher::kill() {
  if (state() == LaunchState::kPreparing) {
    cancelled_ = true;
  } else if (process_ != nullptr && process_->state() != QProcess::NotRunning) {
    log(QStringLiteral("sending SIGKILL"));
    process_->kill();
  }
}

void LocalLauncher::onPrepared(quint64 ticket, const QString& runDir, const QString& configFile,
                               const QString& enginePath, const QString& error) {
  if (ticket != ticket_) return;
  if (!error.isEmpty()) {
    fail(error);
    return;
  }
  setRunDir(runDir);
  emit runDirectoryReady(runDir);
  if (cancelled_) {
    fail(QStringLiteral("launch cancelled before flamingo-train started; %1 holds only its config")
             .arg(runDir));
    return;
  }
  process_ = new QProcess(this);
  process_->setProgram(enginePath);
  process_->setArguments(
      engineArguments(ranks_, launch::freeLoopbackPort(), configFile, runDir, allowPipe_, maxRestarts_));
  process_->setWorkingDirectory(runDir);
  process_->setProcessEnvironment(environment_);
  process_->setStandardInputFile(QProcess::nullDevice());  // the engine reads control files, never stdin
  connect(process_, &QProcess::started, this, &LocalLauncher::onProcessStarted);
  connect(process_, &QProcess::errorOccurred, this, &LocalLauncher::onProcessError);
  connect(process_, &QProcess::finished, this, &LocalLauncher::onProcessFinished);
  connect(process_, &QProcess::readyReadStandardOutput, this,
          [this] { readChannel(OutputChannel::kStdout); });
  connect(process_, &QProcess::readyReadStandardError, this, [this] { readChannel(OutputChannel::kStderr); });
  if (!launchEnv_.empty()) {
    log(QStringLiteral("launch.env: %1").arg(QString::fromStdString(protocol::joinShellWords(launchEnv_))));
  }
  log(QStringLiteral("starting: %1").arg(displayCommand(enginePath, process_->arguments())));
  setState(LaunchState::kStarting);
  process_->start();
}

void LocalLauncher::onProcessStarted() {
  setProcessId(QString::number(process_->processId()));
  log(QStringLiteral("started, pid %1").arg(processId()));
  setState(LaunchState::kRunning);
  emit started(runDir(), processId());
}

void LocalLauncher::onProcessError(QProcess::ProcessError error) {
  // A crash or a signal arrives as finished(); only a failed start has no finished().
  if (error != QProcess::FailedToStart) return;
  fail(QStringLiteral("cannot start %1: %2").arg(process_->program(), process_->errorString()));
}

void LocalLauncher::onProcessFinished(int exitCode, QProcess::ExitStatus status) {
  readChannel(OutputChannel::kStdout);
  readChannel(OutputChannel::kStderr);
  emitLines(stdout_.flush(), OutputChannel::kStdout);
  emitLines(stderr_.flush(), OutputChannel::kStderr);
  const ExitKind how = status == QProcess::CrashExit ? ExitKind::kCrashed : ExitKind::kExited;
  log(QStringLiteral("flamingo-train %1").arg(describeExit(exitCode, how)));
  QMetaObject::invokeMethod(files_->worker(), &LaunchFileWorker::closeLog, Qt::QueuedConnection);
  setState(LaunchState::kExited);
  emit finished(exitCode, how);
}

void LocalLauncher::readChannel(OutputChannel channel) {
  if (channel == OutputChannel::kStdout) {
    emitLines(stdout_.feed(process_->readAllStandardOutput()), channel);
  } else {
    emitLines(stderr_.feed(process_->readAllStandardError()), channel);
  }
}

void LocalLauncher::emitLines(const QStringList& lines, OutputChannel channel) {
  if (lines.isEmpty()) return;
  const QString prefix =
      channel == OutputChannel::kStdout ? QStringLiteral("[out] ") : QStringLiteral("[err] ");
  QByteArray text;
  for (const QString& line : lines) text += (prefix + line + QLatin1Char('\n')).toUtf8();
  LaunchFileWorker* worker = files_->worker();
  QMetaObject::invokeMethod(
      worker, [worker, text] { worker->appendLog(text); }, Qt::QueuedConnection);
  for (const QString& line : lines) emit outputLine(line, channel);
}

void LocalLauncher::log(const QString& note) {
  if (runDir().isEmpty()) return;  // no run directory, no log
  const QByteArray text = (QStringLiteral("[launcher] ") + note + QLatin1Char('\n')).toUtf8();
  LaunchFileWorker* worker = files_->worker();
  QMetaObject::invokeMethod(
      worker, [worker, text] { worker->appendLog(text); }, Qt::QueuedConnection);
}

void LocalLauncher::fail(const QString& message) {
  log(QStringLiteral("failed: %1").arg(message));
  QMetaObject::invokeMethod(files_->worker(), &LaunchFileWorker::closeLog, Qt::QueuedConnection);
  setState(LaunchState::kFailed);
  emit failed(message);
}

}  // namespace fs::app
