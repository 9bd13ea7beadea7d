#include "ui/remote/host_opener_service.h"

#include "app/remote/local_host.h"

namespace fs::ui {

SshHostFactory sshTransportMissing() {
  return [](const std::string& name) -> protocol::StatusOr<std::shared_ptr<app::remote::Host>> {
    return protocol::Status::unsupported("cannot open host '" + name +
                                         "': SSH hosts arrive with the SSH transport; only 'local' "
                                         "(this machine) can be used in this build");
  };
}

HostOpenerService::HostOpenerService(SshHostFactory ssh) : ssh_(std::move(ssh)) {}

void HostOpenerService::setSshFactory(SshHostFactory ssh) {
  std::lock_guard lock(mutex_);
  ssh_ = std::move(ssh);
}

protocol::StatusOr<std::shared_ptr<app::remote::Host>> HostOpenerService::open(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (auto it = hosts_.find(name); it != hosts_.end()) return it->second;
  if (name.empty()) return protocol::Status::invalidArgument("no host name given");
  std::shared_ptr<app::remote::Host> host;
  if (name == "local") {
    host = std::make_shared<app::remote::LocalHost>();
  } else {
    auto opened = ssh_(name);
    if (!opened) return opened.status();
    host = std::move(opened.value());
  }
  hosts_[name] = host;
  return host;
}

app::cluster::HostOpener HostOpenerService::opener() {
  // The launcher's worker may outlive the window: the opener keeps the service.
  return [self = shared_from_this()](const std::string& name) { return self->open(name); };
}

void HostOpenerService::clear() {
  std::lock_guard lock(mutex_);
  hosts_.clear();
}

}  // namespace fs::ui
