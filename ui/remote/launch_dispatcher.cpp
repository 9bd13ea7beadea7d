#include "ui/remote/launch_dispatcher.h"

#include "app/launch/local_launcher.h"
#include "app/launch/ssh/ssh_launcher.h"

namespace fs::ui {

LaunchDispatcher::LaunchDispatcher(app::LocalLauncher* local, std::shared_ptr<HostOpenerService> hosts,
                                   QObject* parent)
    : QObject(parent), local_(local), ssh_(new app::cluster::SshLauncher(hosts->opener(), this)) {}

app::Launcher* LaunchDispatcher::launcherFor(const std::string& kind) const {
  if (kind == "local") return local_;
  if (kind == "ssh") return ssh_;
  return nullptr;
}

app::Launcher* LaunchDispatcher::activeLauncher() const {
  if (local_->isActive()) return local_;
  if (ssh_->isActive()) return ssh_;
  return nullptr;
}

QString LaunchDispatcher::launch(const app::LaunchRequest& request) {
  const std::string& kind = request.config.launch.kind;
  if (app::Launcher* active = activeLauncher()) {
    return tr("A run launched from here is still running (%1): stop it first").arg(active->kind());
  }
  app::Launcher* launcher = launcherFor(kind);
  if (!launcher) {
    if (kind == "slurm") return tr("launch.kind is slurm: submit the batch script from the Launch tab");
    if (kind == "external") {
      return tr(
          "launch.kind is external: the ranks are started by another launcher (torchrun, srun); "
          "choose a target in the Launch tab to start it from here");
    }
    return tr("launch.kind '%1' has no launcher").arg(QString::fromStdString(kind));
  }
  launcher->launch(request);
  return {};
}

}  // namespace fs::ui
