// LaunchTargetPage: where the document's run is launched — This machine, SSH
// nodes or a SLURM cluster — shown as the main window's Launch tab.
//
// The target IS launch.kind: choosing one writes launch.kind (and, for SSH,
// launch.hosts and launch.nnodes from the host list; leaving SSH clears
// launch.hosts, which local and SLURM launches refuse) into the ConfigDocument,
// and a launch.kind changed elsewhere (config form, opened file) selects the
// target here. So the form and the page never disagree, and the window's
// Launch action picks its launcher from launch.kind alone.
//
// Shared by SSH and SLURM: the engine's path on the hosts (kept here, not in
// the config) and the remote run root (launch.remote_workdir). Shared by every
// target: launch.env, the environment of every rank.
//
// The remote work (ssh config aliases, pre-flight, sbatch) runs on the page's
// RemoteWorker thread. Ownership: borrows the document, shares the hosts.
// Thread-safety: GUI thread only.
#pragma once

#include <QSet>
#include <QWidget>
#include <memory>

#include "app/common/worker_thread.h"
#include "app/launch/launch_request.h"
#include "ui/remote/host_opener_service.h"
#include "ui/remote/remote_worker.h"

class QButtonGroup;
class QLabel;
class QLineEdit;
class QStackedWidget;
class QGroupBox;

namespace fs::app {
class ConfigDocument;
}

namespace fs::ui {

class SshTargetPanel;
class SlurmTargetPanel;
class StringMapEditor;

class LaunchTargetPage : public QWidget {
  Q_OBJECT
 public:
  // kExternal (the ranks are started by another launcher) has no button: no
  // target is checked, and choosing one replaces it.
  enum Target { kLocal, kSsh, kSlurm, kExternal };

  LaunchTargetPage(app::ConfigDocument* document, std::shared_ptr<HostOpenerService> hosts,
                   QWidget* parent = nullptr);
  ~LaunchTargetPage() override;

  // The target launch.kind names (kLocal for an unknown kind, which validation reports).
  Target target() const;
  SshTargetPanel* sshPanel() const { return ssh_; }
  SlurmTargetPanel* slurmPanel() const { return slurm_; }
  QButtonGroup* targetButtons() const { return targets_; }
  QLineEdit* engineEdit() const { return engine_; }
  QLineEdit* remoteRootEdit() const { return remoteRoot_; }
  // launch.env, bound to the document both ways.
  StringMapEditor* envEditor() const { return env_; }
  // The worker thread's object (for queueing work behind the page's own, in tests).
  RemoteWorker* remoteWorker() const { return worker_->worker(); }

  // The engine on the hosts ("" = flamingo-train on their PATH).
  QString remoteEngine() const;
  // A launch request for the document's config: the local run root for a local
  // launch, the remote run root and engine for an SSH one.
  app::LaunchRequest request(const QString& localRunRoot) const;
  // The SLURM job's run directory: <remote run root>/<name>-<time of the page or
  // last submit>, with "-2", "-3", ... when a job from here already has that one.
  QString slurmRunDir() const;

 public slots:
  // Writes launch.kind (and the hosts) for `target`.
  void setTarget(Target target);
  // Reads the ssh config's aliases for the host pickers again (the user's and
  // the system's files by default; done once on construction).
  void loadAliases(const app::remote::SshConfigOptions& options = {});

 signals:
  // The host pickers were filled (`error`: the ssh config could not be read).
  void aliasesLoaded(const QStringList& aliases, const QString& error);
  // A SLURM job was submitted (for the queue panel).
  void slurmSubmitted(const QString& loginHost, const QString& jobId, const QString& runDir);

 private:
  void showKind();
  void writeHosts(const QStringList& hosts);
  void onAliases(const QStringList& aliases, const QString& error);

  app::ConfigDocument* document_;
  std::shared_ptr<HostOpenerService> hosts_;
  std::unique_ptr<app::WorkerThread<RemoteWorker>> worker_;
  QButtonGroup* targets_;
  QStackedWidget* stack_;
  QGroupBox* remote_;
  QLineEdit* engine_;
  QLineEdit* remoteRoot_;
  QLabel* aliasState_;
  StringMapEditor* env_;
  SshTargetPanel* ssh_;
  SlurmTargetPanel* slurm_;
  QString stamp_;            // the SLURM run directory's time suffix
  QSet<QString> submitted_;  // run directories of jobs submitted from here: never reused
};

}  // namespace fs::ui
