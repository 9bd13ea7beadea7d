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

// NOTE [Opening hosts concurrently]
// Opening an SSH host can take as long as the connect timeout (15 s for a host
// that does not answer) plus a person answering a host-key question. The
// service's mutex guards only its maps, never a connect: an open of one name
// runs unlocked, so a follower's liveness check stuck on an unreachable node
// does not hold up a launch or a queue poll on another host. Callers asking for
// a name that is being opened wait for that one open and share its outcome
// (one connection, one host-key question); a failure is handed to them but not
// cached, so a later call tries again.
struct HostOpenerService::Opening {
  bool done = false;
  protocol::StatusOr<std::shared_ptr<app::remote::Host>> result =
      protocol::Status::ioError("opening the host did not finish");
};

protocol::StatusOr<std::shared_ptr<app::remote::Host>> HostOpenerService::open(const std::string& name) {
  if (name.empty()) return protocol::Status::invalidArgument("no host name given");
  std::unique_lock lock(mutex_);
  if (auto it = hosts_.find(name); it != hosts_.end()) return it->second;
  if (auto it = opening_.find(name); it != opening_.end()) {
    const std::shared_ptr<Opening> pending = it->second;
    opened_.wait(lock, [&] { return pending->done; });
    return pending->result;
  }
  auto mine = std::make_shared<Opening>();
  opening_[name] = mine;
  const SshHostFactory ssh = ssh_;
  const std::uint64_t generation = generation_;
  lock.unlock();

  protocol::StatusOr<std::shared_ptr<app::remote::Host>> result =
      protocol::Status::ioError("opening the host did not finish");
  if (name == "local") {
    result = std::shared_ptr<app::remote::Host>(std::make_shared<app::remote::LocalHost>());
  } else {
    result = ssh(name);
  }

  lock.lock();
  if (result.isOk() && generation == generation_) hosts_[name] = result.value();
  opening_.erase(name);
  mine->result = result;
  mine->done = true;
  lock.unlock();
  opened_.notify_all();
  return result;
}

app::cluster::HostOpener HostOpenerService::opener() {
  // The launcher's worker may outlive the window: the opener keeps the service.
  return [self = shared_from_this()](const std::string& name) { return self->open(name); };
}

void HostOpenerService::clear() {
  std::lock_guard lock(mutex_);
  hosts_.clear();
  ++generation_;
}

}  // namespace fs::ui
