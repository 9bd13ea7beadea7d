// Launcher: starts one run and reports on it. The interface the UI sees; the
// local launcher (QProcess, local_launcher.h) and the SSH launcher
// (app/launch/ssh/ssh_launcher.h) implement it; SLURM jobs are submitted through
// app/launch/slurm/slurm_jobs.h instead.
//
// One launch at a time, each in a new run directory; everything comes back as
// signals, in the order of NOTE [Launch signals] in launcher.cpp.
//
// Nothing here opens a dialog: errors are `failed` / `warning` messages.
// Thread-safety: a QObject of the GUI thread; use it from that thread only.
#pragma once

#include <QObject>
#include <QString>

#include "app/launch/launch_request.h"

namespace fs::app {

class Launcher : public QObject {
  Q_OBJECT
 public:
  explicit Launcher(QObject* parent = nullptr);
  ~Launcher() override;

  // "local", "ssh" or "slurm": the run.json launcher kinds.
  virtual QString kind() const = 0;

  LaunchState state() const { return state_; }
  bool isActive() const { return fs::app::isActive(state_); }
  // The current launch's run directory; empty before runDirectoryReady.
  QString runDir() const { return runDir_; }
  // Process id (local), "host:pid" (SSH) or job id (SLURM); empty before started.
  QString processId() const { return processId_; }

 public slots:
  // Starts a new run. While another launch is active this only emits failed().
  virtual void launch(const fs::app::LaunchRequest& request) = 0;
  // Asks the run to stop gracefully: SIGTERM, which the engine treats as a
  // `stop` command (checkpoint, then exit 0). Before the process started it
  // cancels the launch instead. No-op when nothing is active.
  virtual void terminate() = 0;
  // Ends the process at once (SIGKILL): no checkpoint. No-op when nothing runs.
  virtual void kill() = 0;

 signals:
  void stateChanged(fs::app::LaunchState state);
  // The run directory exists and holds config.yaml; the process is not started yet.
  void runDirectoryReady(const QString& runDir);
  // The process runs; `processId` as processId() says.
  void started(const QString& runDir, const QString& processId);
  // One line of the process's output, without its line end.
  void outputLine(const QString& line, fs::app::OutputChannel channel);
  // The process ended (any exit code). Not emitted after failed().
  void finished(int exitCode, fs::app::ExitKind how);
  // The launch did not get a process; says why, naming the file, setting or path.
  void failed(const QString& message);
  // Something the user should know while the run goes on (e.g. the launcher log
  // cannot be written).
  void warning(const QString& message);

 protected:
  // Sets state() and emits stateChanged when it changed.
  void setState(LaunchState state);
  void setRunDir(const QString& runDir) { runDir_ = runDir; }
  void setProcessId(const QString& processId) { processId_ = processId; }

 private:
  LaunchState state_ = LaunchState::kIdle;
  QString runDir_;
  QString processId_;
};

}  // namespace fs::app
