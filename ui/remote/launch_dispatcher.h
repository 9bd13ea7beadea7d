// LaunchDispatcher: the launcher for a config's launch.kind — the window's
// LocalLauncher for "local", an SshLauncher (hosts from the HostOpenerService)
// for "ssh". SLURM jobs are submitted from the launch target page (its batch
// script may be edited), and "external" runs are started by someone else, so
// neither has a launcher here: launch() says so instead of starting anything.
// A config is never started by a launcher of another kind.
//
// Ownership: owns the SshLauncher, borrows the LocalLauncher.
// Thread-safety: GUI thread only.
#pragma once

#include <QObject>
#include <QString>
#include <memory>

#include "app/launch/launch_request.h"
#include "ui/remote/host_opener_service.h"

namespace fs::app {
class Launcher;
class LocalLauncher;
}  // namespace fs::app
namespace fs::app::cluster {
class SshLauncher;
}

namespace fs::ui {

class LaunchDispatcher : public QObject {
  Q_OBJECT
 public:
  LaunchDispatcher(app::LocalLauncher* local, std::shared_ptr<HostOpenerService> hosts,
                   QObject* parent = nullptr);

  app::LocalLauncher* localLauncher() const { return local_; }
  app::cluster::SshLauncher* sshLauncher() const { return ssh_; }
  // The launcher for `kind`; nullptr for kinds without one (slurm, external, unknown).
  app::Launcher* launcherFor(const std::string& kind) const;
  // The launcher with an active launch, if any.
  app::Launcher* activeLauncher() const;

  // Starts `request` with the launcher of request.config.launch.kind. Returns ""
  // when the launch was handed to it (its signals tell the rest), else why not.
  QString launch(const app::LaunchRequest& request);

 private:
  app::LocalLauncher* local_;
  app::cluster::SshLauncher* ssh_;
};

}  // namespace fs::ui
