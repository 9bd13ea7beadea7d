// RemoteRunFollow: follows a run directory on a Host in the window's RunMonitor
// (RunMonitor::attach with a HostRunDir), opening the Host on a worker thread
// first, and keeps the ConnectionIndicator on it. The monitor's dead-process alert
// probes the node agents launch.json records (cluster::agentsAliveCheck), on their
// hosts opened through the HostOpenerService.
//
// Ownership: shares the hosts; the source it attaches holds its Host, so the
// Host outlives the follower. Thread-safety: GUI thread only.
#pragma once

#include <QObject>
#include <memory>

#include "app/common/worker_thread.h"
#include "ui/remote/host_opener_service.h"
#include "ui/remote/remote_worker.h"

namespace fs::app {
class RunMonitor;
}  // namespace fs::app

namespace fs::ui {

class ConnectionIndicator;

class RemoteRunFollow : public QObject {
  Q_OBJECT
 public:
  RemoteRunFollow(std::shared_ptr<HostOpenerService> hosts, app::RunMonitor* monitor,
                  ConnectionIndicator* indicator, QObject* parent = nullptr);
  ~RemoteRunFollow() override;

 public slots:
  // Opens `host`, then attaches the monitor to `runDir` (absolute on it).
  void follow(const QString& host, const QString& runDir);
  // The monitor follows a local run (or none): the indicator hides.
  void followingLocal();

 signals:
  // The monitor follows the run; `open` is its Host (for the control client).
  void attached(const QString& host, const QString& runDir,
                const std::shared_ptr<fs::app::remote::Host>& open);
  void failed(const QString& message);

 private:
  std::shared_ptr<HostOpenerService> hosts_;
  std::unique_ptr<app::WorkerThread<RemoteWorker>> worker_;
  app::RunMonitor* monitor_;
  ConnectionIndicator* indicator_;
  QString host_;
  QString runDir_;
};

}  // namespace fs::ui
