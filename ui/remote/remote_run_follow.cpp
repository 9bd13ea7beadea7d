#include "ui/remote/remote_run_follow.h"

#include "app/cluster/agent_liveness.h"
#include "app/monitor/background_alive_check.h"
#include "app/monitor/host_file_source.h"
#include "app/monitor/run_monitor.h"
#include "ui/remote/connection_indicator.h"

namespace fs::ui {

using app::hostRunDir;

RemoteRunFollow::RemoteRunFollow(std::shared_ptr<HostOpenerService> hosts, app::RunMonitor* monitor,
                                 ConnectionIndicator* indicator, QObject* parent)
    : QObject(parent),
      hosts_(hosts),
      worker_(std::make_unique<app::WorkerThread<RemoteWorker>>(new RemoteWorker(std::move(hosts)),
                                                                QStringLiteral("remote-follow"))),
      monitor_(monitor),
      indicator_(indicator) {
  connect(worker_->worker(), &RemoteWorker::hostOpened, this,
          [this](const QString& name, const std::shared_ptr<app::remote::Host>& host) {
            if (name != host_) return;
            const std::string dir = runDir_.toStdString();
            // The probe opens the other nodes' hosts: off the follower's thread.
            monitor_->attach(
                hostRunDir(host, dir),
                app::aliveCheckInBackground(app::cluster::agentsAliveCheck(host, dir, hosts_->opener())));
            indicator_->setRemote(host_);
            emit attached(host_, runDir_, host);
          });
  connect(worker_->worker(), &RemoteWorker::hostFailed, this,
          [this](const QString& name, const QString& why) {
            if (name == host_) emit failed(why);
          });
  connect(monitor_, &app::RunMonitor::issue, indicator_, &ConnectionIndicator::noteIssue);
  connect(monitor_, &app::RunMonitor::delivered, indicator_, &ConnectionIndicator::noteDelivered);
}

RemoteRunFollow::~RemoteRunFollow() = default;

void RemoteRunFollow::follow(const QString& host, const QString& runDir) {
  host_ = host;
  runDir_ = runDir;
  RemoteWorker* worker = worker_->worker();
  QMetaObject::invokeMethod(worker, [worker, host] { worker->openHost(host); });
}

void RemoteRunFollow::followingLocal() {
  host_.clear();
  indicator_->setLocal();
}

}  // namespace fs::ui
