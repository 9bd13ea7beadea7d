// SshLauncher: the Launcher (app/launch/launcher.h) for launch.kind=ssh — one
// detached node agent per host over SSH (ssh_launch.h), then watching the agents
// until every one has ended.
//
// The SSH work runs on a worker thread (SshLaunchWorker); this object only keeps
// the state and re-emits. The run does not depend on this object: destroying it (or
// the app) leaves the agents running; attach to the run again from its launch.json.
//
// Thread-safety: a QObject of the GUI thread; use it from that thread only.
#pragma once

#include <QString>
#include <memory>

#include "app/launch/launcher.h"
#include "app/launch/ssh/ssh_launch.h"
#include "backend/protocol/wire/launch_record.h"

namespace fs::app {
template <class Worker>
class WorkerThread;
}

namespace fs::app::cluster {

class SshLaunchWorker;

class SshLauncher : public Launcher {
  Q_OBJECT
 public:
  // `open` is called on the worker thread.
  explicit SshLauncher(HostOpener open, QObject* parent = nullptr);
  ~SshLauncher() override;

  QString kind() const override { return QStringLiteral("ssh"); }
  // The launch record once the agents started (empty run_dir before).
  const protocol::LaunchRecord& record() const { return record_; }
  // How often the agents are checked while the run goes on.
  void setPollIntervalMs(int ms);

 public slots:
  void launch(const fs::app::LaunchRequest& request) override;
  // SIGTERM to every agent (forwarded to the ranks: checkpoint, then exit).
  void terminate() override;
  // SIGKILL to every agent's process group: no checkpoint.
  void kill() override;

 signals:
  // Each step of the launch ("node-b: starting node agent 1").
  void progress(const QString& message);

 private:
  void onStarted(const fs::protocol::LaunchRecord& record, const QStringList& warnings);
  void onFailed(const QString& message);
  void onFinished(int exitCode, bool crashed, const QString& message);

  std::unique_ptr<WorkerThread<SshLaunchWorker>> worker_;
  protocol::LaunchRecord record_;
};

}  // namespace fs::app::cluster
