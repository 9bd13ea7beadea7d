// HostOpenerService: the Hosts the GUI works with, one per host name, opened on
// first use and shared afterwards: "local" is this machine (LocalHost); any
// other name goes to the SSH factory.
//
// NOTE [SSH host factory]: names other than "local" become SshHosts resolved
// through the user's ssh config (sshHostFactory). Whoever can ask a person
// passes a prompter that can (MainWindow: its DialogPrompter); the default one
// asks nobody: unknown host keys are refused and encrypted keys skipped, as
// `flamingo-studio remote --batch` does.
//
// Ownership: owns the Hosts (shared_ptr: launchers and pollers keep theirs).
// Thread-safety: open() blocks (SSH connect, host-key questions) and is called
// on worker threads, never the GUI thread; every member is thread-safe. See
// NOTE [Opening hosts concurrently] in the .cpp.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "app/launch/ssh/ssh_launch.h"
#include "app/remote/prompter.h"
#include "app/remote/remote_host.h"
#include "app/remote/ssh_config.h"
#include "backend/protocol/status.h"

namespace fs::ui {

using SshHostFactory =
    std::function<protocol::StatusOr<std::shared_ptr<app::remote::Host>>(const std::string& name)>;

// SshHosts for names resolved in the ssh config `options` names (default: the
// user's), asking `prompter` (null: a prompter that refuses everything).
SshHostFactory sshHostFactory(std::shared_ptr<app::remote::Prompter> prompter = nullptr,
                              app::remote::SshConfigOptions options = {});

class HostOpenerService : public std::enable_shared_from_this<HostOpenerService> {
 public:
  explicit HostOpenerService(SshHostFactory ssh = sshHostFactory());

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

  static std::shared_ptr<HostOpenerService> create(SshHostFactory ssh = sshHostFactory()) {
    return std::make_shared<HostOpenerService>(std::move(ssh));
  }

 private:
  struct Opening;  // one open in progress, shared with those waiting for it

  std::mutex mutex_;  // guards the members below; never held while connecting
  std::condition_variable opened_;
  SshHostFactory ssh_;
  std::map<std::string, std::shared_ptr<app::remote::Host>> hosts_;
  std::map<std::string, std::shared_ptr<Opening>> opening_;
  std::uint64_t generation_ = 0;  // clear() counts up: opens begun before it are not kept
};

}  // namespace fs::ui
