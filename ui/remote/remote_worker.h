// RemoteWorker: the blocking remote work of the launch target page and the
// SLURM queue panel, on a WorkerThread (app/common/worker_thread.h): loading the
// user's ssh config, opening hosts (HostOpenerService), the pre-flight checks,
// submitting and cancelling SLURM jobs, listing a remote run root. Requests are queued calls
// (QMetaObject::invokeMethod with a lambda); results come back as signals.
//
// cancel() may be called from any thread: the pre-flight's commands poll it.
// Ownership: shares the HostOpenerService. Thread-safety: lives on its worker
// thread; only cancel() is called from elsewhere.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "app/cluster/preflight.h"
#include "app/cluster/remote_runs.h"
#include "app/remote/remote_host.h"
#include "app/remote/ssh_config.h"
#include "backend/protocol/config/config_types.h"
#include "ui/remote/host_opener_service.h"

Q_DECLARE_METATYPE(fs::app::cluster::PreflightTable)
Q_DECLARE_METATYPE(fs::app::cluster::RemoteRunScan)
Q_DECLARE_METATYPE(std::shared_ptr<fs::app::remote::Host>)

namespace fs::ui {

// What "Check hosts" checks: the hosts by name, node 0 first.
struct PreflightInput {
  std::vector<std::string> hosts;
  std::string engine;  // flamingo-train on every host; empty: from the login PATH
  std::string runRoot;
  std::string rendezvousAddress;  // empty: node 0's name ("127.0.0.1" for "local")
  int rendezvousPort = 29500;
  int gpusPerNode = 0;
  bool requireEngine = true;
};

class RemoteWorker : public QObject {
  Q_OBJECT
 public:
  explicit RemoteWorker(std::shared_ptr<HostOpenerService> hosts);

  // From any thread: the running (or next queued) pre-flight ends ("cancelled").
  void cancel() { cancel_ = true; }
  // Before queueing a pre-flight (on the requesting thread): clears an old cancel.
  void armCancel() { cancel_ = false; }

  // Slots, called queued on the worker thread.
  void loadAliases(const app::remote::SshConfigOptions& options = {});
  void openHost(const QString& name);
  void preflight(const PreflightInput& input);
  void submitSlurm(const QString& host, const QString& runDir, const QString& script,
                   const protocol::RunConfig& config);
  void cancelSlurmJob(const QString& host, const QString& jobId);
  // Lists the runs under `root` on `host` (scanRemoteRunRoot); cancel() ends it early.
  void scanRunRoot(const QString& host, const QString& root);

 signals:
  // The ssh config's aliases (empty with `error` when it could not be read).
  void aliasesLoaded(const QStringList& aliases, const QString& error);
  void hostOpened(const QString& name, const std::shared_ptr<fs::app::remote::Host>& host);
  void hostFailed(const QString& name, const QString& message);
  void preflightProgress(const QString& message);
  // The table (rows of hosts that could not be opened say so), or cancelled.
  void preflightDone(const fs::app::cluster::PreflightTable& table, bool cancelled);
  void slurmSubmitted(const QString& host, const QString& jobId, const QString& runDir);
  void slurmCancelled(const QString& host, const QString& jobId);
  void slurmFailed(const QString& what, const QString& message);
  // The runs (or the error: the host could not be opened, the root not listed).
  void runRootScanned(const fs::app::cluster::RemoteRunScan& scan);

 private:
  std::shared_ptr<HostOpenerService> hosts_;
  std::atomic<bool> cancel_{false};
};

}  // namespace fs::ui
