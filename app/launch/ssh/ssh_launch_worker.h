// SshLaunchWorker: SshLauncher's worker-thread half — runs launchOverSsh, signals
// the agents, and polls them until they have all ended. Internal to SshLauncher.
//
// Thread-safety: lives on its worker thread; cancel() from any thread.
#pragma once

#include <QObject>
#include <QStringList>
#include <atomic>
#include <memory>
#include <vector>

#include "app/launch/ssh/ssh_launch.h"
#include "backend/protocol/wire/launch_record.h"

class QTimer;

namespace fs::app::cluster {

class SshLaunchWorker : public QObject {
  Q_OBJECT
 public:
  explicit SshLaunchWorker(HostOpener open, QObject* parent = nullptr);
  void cancel() { cancel_.store(true); }
  void setPollIntervalMs(int ms) { pollMs_ = ms; }

 public slots:
  void launch(const fs::app::cluster::SshLaunchPlan& plan);
  void signalAgents(const QString& signal, bool wholeGroup);

 signals:
  void progress(const QString& message);
  void started(const fs::protocol::LaunchRecord& record, const QStringList& warnings);
  void failed(const QString& message);
  void warning(const QString& message);
  void finished(int exitCode, bool crashed, const QString& message);

 private:
  void poll();

  HostOpener open_;
  std::atomic<bool> cancel_{false};
  int pollMs_ = 2000;
  QTimer* timer_ = nullptr;
  protocol::LaunchRecord record_;
  std::vector<std::shared_ptr<remote::Host>> hosts_;
  QString lastPollError_;
};

}  // namespace fs::app::cluster

Q_DECLARE_METATYPE(fs::app::cluster::SshLaunchPlan)
Q_DECLARE_METATYPE(fs::protocol::LaunchRecord)
