// HostOpenerService: the Hosts the GUI works with, one per host name, opened on
// first use and shared afterwards: "local" is this machine (LocalHost); any
// other name goes to the SSH factory.
//
// NOTE [SSH host factory]: until the SSH transport (app/remote/ssh_host.h) is
// merged there is no SshHost, so the default factory is sshTransportMissing(),
// which refuses every name with "SSH hosts arrive with the SSH transport". The
// lead plugs SshHost in with setSshFactory() in one place (MainWindow's
// constructor), e.g. resolving the name through SshConfig and connecting with
// a DialogPrompter, as studio/remote/cli_ssh.cpp does for the terminal.
//
// Ownership: owns the Hosts (shared_ptr: launchers and pollers keep theirs).
// Thread-safety: open() blocks (SSH connect, host-key questions) and is called
// on worker threads, never the GUI thread; every member is thread-safe (one
// mutex; opens of different names are serialised, which is fine for a few hosts).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "app/cluster/ssh_launch.h"
#include "app/remote/remote_host.h"
#include "backend/protocol/status.h"

namespace fs::ui {

using SshHostFactory =
    std::function<protocol::StatusOr<std::shared_ptr<app::remote::Host>>(const std::string& name)>;

// The factory used until the SSH transport is plugged in: always kUnsupported.
SshHostFactory sshTransportMissing();

class HostOpenerService : public std::enable_shared_from_this<HostOpenerService> {
 public:
  explicit HostOpenerService(SshHostFactory ssh = sshTransportMissing());

  // Replaces the SSH factory; hosts already open stay open.
  void setSshFactory(SshHostFactory ssh);

  // The open Host for `name` ("local", an ssh_config alias or [user@]host[:port]);
  // opens it first when needed. A failed open is not cached: the next call tries again.
  protocol::StatusOr<std::shared_ptr<app::remote::Host>> open(const std::string& name);
  // open() as the launchers' HostOpener (keeps this service alive while in use).
  // REQUIRES: this service is held by a shared_ptr (create()).
  app::cluster::HostOpener opener();
  // Forgets every host (connections close once nobody else holds them).
  void clear();

  static std::shared_ptr<HostOpenerService> create(SshHostFactory ssh = sshTransportMissing()) {
    return std::make_shared<HostOpenerService>(std::move(ssh));
  }

 private:
  std::mutex mutex_;
  SshHostFactory ssh_;
  std::map<std::string, std::shared_ptr<app::remote::Host>> hosts_;
};

}  // namespace fs::ui
