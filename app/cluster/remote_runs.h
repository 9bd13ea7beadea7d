// The runs under a run root on a remote::Host: app/runs/run_catalog.h's scan, over
// SFTP (or on this machine through LocalHost), with each run's launch.json when it has
// one, and whether its recorded agents still run.
//
// Blocks on the Host: call it on a worker thread.
// Thread-safety: reentrant.
#pragma once

#include <QHash>
#include <QList>
#include <QString>
#include <atomic>
#include <optional>

#include "app/remote/remote_host.h"
#include "app/runs/run_catalog.h"
#include "backend/protocol/wire/launch_record.h"

namespace fs::app::cluster {

struct RemoteRun {
  RunSummary summary;                            // summary.host = host.name()
  std::optional<protocol::LaunchRecord> launch;  // launch.json, when the run has one
  QString launchError;                           // launch.json present but unreadable
};

struct RemoteRunScan {
  QString host;
  QString root;           // absolute on the host when it could be resolved
  QList<RemoteRun> runs;  // in sortRuns order
  QString error;          // the root could not be listed; runs is empty
  bool cancelled = false;
};

// Lists `root` on `host` (relative = under the login directory) and reads each
// directory's run.json and launch.json; polls `cancel` between directories.
RemoteRunScan scanRemoteRunRoot(remote::Host& host, const QString& root,
                                const std::atomic<bool>* cancel = nullptr);

}  // namespace fs::app::cluster
