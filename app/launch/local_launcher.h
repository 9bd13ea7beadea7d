// LocalLauncher: runs `flamingo-train train` on this machine as a child
// process (QProcess), in a new run directory.
//
// launch(): on the file worker, find the engine (engine_locator.h), create
// <run_root>/<name>-<time> with config.yaml (run_preparation.h) and open
// logs/launcher.log; then, back on the GUI thread, start
//   flamingo-train train --config <run>/config.yaml --run-dir <run>
// as an argument vector (no shell) with the run directory as working
// directory, and launch.env on top of this process's environment.
// QProcess starts asynchronously: `started` carries the pid as soon as it
// reports one. Every stdout / stderr line is emitted and appended to
// launcher.log ("[out] ", "[err] ", and "[launcher] " for our own notes).
//
// Destroying a LocalLauncher whose process still runs kills it (SIGKILL, as
// QProcess does): call terminate() and wait for finished() to stop gracefully.
//
// Thread-safety: a QObject of the GUI thread; use it from that thread only.
#pragma once

#include <QDateTime>
#include <QProcess>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/launch/engine_locator.h"
#include "app/launch/launcher.h"
#include "app/launch/output_lines.h"

namespace fs::app {

class LaunchFileWorker;
template <class Worker>
class WorkerThread;

// launch.nproc_per_node of the request with its overrides applied (at least 1).
int ranksPerNode(const LaunchRequest& request);
// The engine's environment: `base` with the request's launch.env (overrides applied) on
// top. The ranks inherit it: the one rank is the engine itself, several are started by the
// node agent, which passes its environment on (NOTE [Launch environment],
// backend/protocol/config/launch_env.h).
QProcessEnvironment engineEnvironment(const LaunchRequest& request,
                                      QProcessEnvironment base = QProcessEnvironment::systemEnvironment());
// The engine's arguments for a local run of `ranks` processes: `train` for
// one; for more, the node agent (`launch --nproc-per-node N --master-port P
// --run-dir D -- train --config F`), which starts the ranks, forwards
// SIGTERM to them and stops them all when one fails. `allowPipe` adds
// --allow-pipe to the train command (LaunchRequest::allowPipe). `maxRestarts`
// (launch.max_restarts) above 0 always goes through the agent, with
// `--max-restarts N`, even for one rank: the agent restarts, the engine resumes.
QStringList engineArguments(int ranks, int masterPort, const QString& configFile, const QString& runDir,
                            bool allowPipe = false, int maxRestarts = 0);

class LocalLauncher : public Launcher {
  Q_OBJECT
 public:
  using WallClock = std::function<QDateTime()>;  // names run directories

  // `search` says where flamingo-train is looked for (default: next to the app,
  // then PATH).
  explicit LocalLauncher(EngineSearch search = EngineSearch::fromEnvironment(), QObject* parent = nullptr);
  // `now` replaces QDateTime::currentDateTime (tests); empty = that clock.
  LocalLauncher(EngineSearch search, WallClock now, QObject* parent = nullptr);
  ~LocalLauncher() override;

  QString kind() const override { return QStringLiteral("local"); }
  const EngineSearch& engineSearch() const { return search_; }
  void setEngineSearch(const EngineSearch& search) { search_ = search; }

 public slots:
  void launch(const fs::app::LaunchRequest& request) override;
  void terminate() override;
  void kill() override;

 private:
  void onPrepared(quint64 ticket, const QString& runDir, const QString& configFile, const QString& enginePath,
                  const QString& error);
  void onProcessStarted();
  void onProcessError(QProcess::ProcessError error);
  void onProcessFinished(int exitCode, QProcess::ExitStatus status);
  void readChannel(OutputChannel channel);
  void emitLines(const QStringList& lines, OutputChannel channel);
  void log(const QString& note);  // a "[launcher] " line
  void fail(const QString& message);

  EngineSearch search_;
  WallClock now_;
  std::unique_ptr<WorkerThread<LaunchFileWorker>> files_;
  QProcess* process_ = nullptr;  // the current launch's; replaced by the next launch
  quint64 ticket_ = 0;           // of the preparation in flight; older results are dropped
  bool cancelled_ = false;       // terminate() during preparation
  OutputLines stdout_;
  OutputLines stderr_;
  int ranks_ = 1;                       // processes of the current launch
  int maxRestarts_ = 0;                 // launch.max_restarts of the current launch
  bool allowPipe_ = false;              // the current launch's LaunchRequest::allowPipe
  QProcessEnvironment environment_;     // the current launch's engineEnvironment()
  std::vector<std::string> launchEnv_;  // its launch.env as NAME=VALUE, for the log
};

}  // namespace fs::app
