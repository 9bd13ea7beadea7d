#include "ui/remote/host_opener_service.h"

#include "app/remote/local_host.h"
#include "app/remote/ssh_host.h"

namespace fs::ui {

namespace {

// For hosts opened where nobody can be asked.
class RefusingPrompter : public app::remote::Prompter {
 public:
  app::remote::HostKeyAnswer hostKey(const app::remote::HostKeyQuestion&) override {
    return app::remote::HostKeyAnswer::kReject;
  }
  std::optional<app::remote::Secret> passphrase(const std::string&, int) override { return std::nullopt; }
};

}  // namespace

SshHostFactory sshHostFactory(std::shared_ptr<app::remote::Prompter> prompter,
                              app::remote::SshConfigOptions options) {
  if (!prompter) prompter = std::make_shared<RefusingPrompter>();
  return
      [prompter, options](const std::string& name) -> protocol::StatusOr<std::shared_ptr<app::remote::Host>> {
        auto config = app::remote::SshConfig::load(options);  // each open: edits to ~/.ssh/config apply
        if (!config) return config.status();
        auto resolve = [c = std::move(config.value())](const std::string& d) { return c.resolve(d); };
        auto spec = resolve(name);
        if (!spec) return spec.status();
        auto host = std::make_shared<app::remote::SshHost>(name, spec.value(), prompter, resolve);
        if (auto s = host->connect(); !s) return s;
        return std::shared_ptr<app::remote::Host>(host);
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
