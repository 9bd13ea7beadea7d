#include "ui/remote/remote_worker.h"

#include "app/launch/slurm/slurm_jobs.h"

namespace fs::ui {
namespace {

using app::cluster::CheckKind;
using app::cluster::CheckStatus;
using app::cluster::PreflightRow;
using app::cluster::PreflightTable;

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

// A table for hosts that could not all be opened: each failed host's first row
// fails with the reason, its other checks and every other host's are skipped.
PreflightTable unopenedTable(const std::vector<std::string>& hosts, const std::vector<std::string>& errors) {
  PreflightTable table;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    for (CheckKind kind : {CheckKind::kEngine, CheckKind::kDisk, CheckKind::kResources, CheckKind::kClock,
                           CheckKind::kRendezvous}) {
      PreflightRow row;
      row.host = hosts[i];
      row.node = static_cast<int>(i);
      row.check = kind;
      row.status = CheckStatus::kSkipped;
      if (kind == CheckKind::kEngine && !errors[i].empty()) {
        row.status = CheckStatus::kFail;
        row.value = "not connected";
        row.action = hosts[i] + ": " + errors[i];
      } else {
        row.value = errors[i].empty() ? "another host could not be reached" : "not connected";
      }
      table.rows.push_back(std::move(row));
    }
  }
  return table;
}

}  // namespace

RemoteWorker::RemoteWorker(std::shared_ptr<HostOpenerService> hosts) : hosts_(std::move(hosts)) {
  qRegisterMetaType<fs::app::cluster::PreflightTable>();
  qRegisterMetaType<fs::app::cluster::RemoteRunScan>();
  qRegisterMetaType<std::shared_ptr<fs::app::remote::Host>>();
}

void RemoteWorker::loadAliases(const app::remote::SshConfigOptions& options) {
  auto config = app::remote::SshConfig::load(options);
  if (!config) {
    emit aliasesLoaded({}, qs(config.status().message()));
    return;
  }
  QStringList aliases;
  for (const auto& a : config->listAliases()) aliases << qs(a);
  emit aliasesLoaded(aliases, {});
}

void RemoteWorker::openHost(const QString& name) {
  auto host = hosts_->open(name.toStdString());
  if (!host) {
    emit hostFailed(name, qs(host.status().message()));
    return;
  }
  emit hostOpened(name, host.value());
}

void RemoteWorker::preflight(const PreflightInput& input) {
  std::vector<std::shared_ptr<app::remote::Host>> open;
  std::vector<std::string> errors(input.hosts.size());
  bool allOpen = true;
  for (std::size_t i = 0; i < input.hosts.size(); ++i) {
    if (cancel_) {
      emit preflightDone({}, true);
      return;
    }
    emit preflightProgress(tr("Connecting to %1 (node %2)\u2026").arg(qs(input.hosts[i])).arg(i));
    auto host = hosts_->open(input.hosts[i]);
    if (host) {
      open.push_back(host.value());
    } else {
      errors[i] = host.status().message();
      allOpen = false;
    }
  }
  if (!allOpen) {
    emit preflightDone(unopenedTable(input.hosts, errors), false);
    return;
  }
  app::cluster::PreflightRequest request;
  for (const auto& host : open) request.hosts.push_back({host.get(), input.engine});
  request.rendezvous_address = input.rendezvousAddress;
  if (request.rendezvous_address.empty() && !input.hosts.empty())
    request.rendezvous_address = input.hosts.front() == "local" ? "127.0.0.1" : input.hosts.front();
  request.rendezvous_port = input.rendezvousPort;
  request.run_root = input.runRoot;
  request.gpus_per_node = input.gpusPerNode;
  request.require_engine = input.requireEngine;
  request.cancel = &cancel_;
  emit preflightProgress(tr("Checking %n host(s): engine, disk, resources, clock, rendezvous\u2026", nullptr,
                            static_cast<int>(open.size())));
  PreflightTable table = app::cluster::runPreflight(request);
  emit preflightDone(table, cancel_.load());
}

void RemoteWorker::submitSlurm(const QString& hostName, const QString& runDir, const QString& script,
                               const protocol::RunConfig& config) {
  auto host = hosts_->open(hostName.toStdString());
  if (!host) {
    emit slurmFailed(tr("Submit"), qs(host.status().message()));
    return;
  }
  app::cluster::SlurmJobs jobs(*host.value());
  auto id = jobs.submit(runDir.toStdString(), script.toStdString(), config);
  if (!id) {
    emit slurmFailed(tr("Submit"), qs(id.status().message()));
    return;
  }
  emit slurmSubmitted(hostName, qs(id.value()), runDir);
}

void RemoteWorker::cancelSlurmJob(const QString& hostName, const QString& jobId) {
  auto host = hosts_->open(hostName.toStdString());
  if (!host) {
    emit slurmFailed(tr("Cancel %1").arg(jobId), qs(host.status().message()));
    return;
  }
  app::cluster::SlurmJobs jobs(*host.value());
  if (auto s = jobs.cancel(jobId.toStdString()); !s) {
    emit slurmFailed(tr("Cancel %1").arg(jobId), qs(s.message()));
    return;
  }
  emit slurmCancelled(hostName, jobId);
}

void RemoteWorker::scanRunRoot(const QString& hostName, const QString& root) {
  auto host = hosts_->open(hostName.toStdString());
  if (!host) {
    app::cluster::RemoteRunScan scan;
    scan.host = hostName;
    scan.root = root;
    scan.error = qs(host.status().message());
    emit runRootScanned(scan);
    return;
  }
  app::cluster::RemoteRunScan scan = app::cluster::scanRemoteRunRoot(*host.value(), root, &cancel_);
  emit runRootScanned(scan);
}

}  // namespace fs::ui
