// CliContext's hosts: "local" is this machine (LocalHost); anything else an SshHost
// resolved through the ssh config, asking on the terminal (TerminalPrompter).
#include "app/remote/local_host.h"
#include "app/remote/ssh_config.h"
#include "app/remote/ssh_host.h"
#include "studio/remote/cli_context.h"
#include "studio/remote/terminal_prompter.h"

namespace fs::studio::remote {

struct CliContext::Ssh {
  std::optional<app::remote::SshConfig> config;
  std::string configError;
  std::shared_ptr<TerminalPrompter> prompter;
};

CliContext::CliContext(GlobalOptions options, std::ostream& out, std::ostream& err)
    : options_(std::move(options)), out_(out), err_(err), ssh_(std::make_unique<Ssh>()) {
  ssh_->prompter = std::make_shared<TerminalPrompter>(options_.batch, err_);
}

CliContext::~CliContext() = default;

namespace {

app::remote::SshConfigOptions configOptions(const GlobalOptions& o) {
  app::remote::SshConfigOptions c;
  if (!o.sshConfig.empty()) {
    c.user_config = o.sshConfig;
    c.system_config.clear();  // an explicit file says everything, as ssh -F does
  }
  return c;
}

}  // namespace

protocol::StatusOr<std::shared_ptr<app::remote::Host>> CliContext::open(const std::string& name) {
  if (auto it = hosts_.find(name); it != hosts_.end()) return it->second;
  std::shared_ptr<app::remote::Host> host;
  if (name == "local") {
    host = std::make_shared<app::remote::LocalHost>();
  } else {
    if (!ssh_->config && ssh_->configError.empty()) {
      auto loaded = app::remote::SshConfig::load(configOptions(options_));
      if (loaded) {
        ssh_->config = std::move(loaded.value());
      } else {
        ssh_->configError = loaded.status().message();
      }
    }
    if (!ssh_->config) return protocol::Status::invalidArgument(ssh_->configError);
    const app::remote::SshConfig config = *ssh_->config;
    const std::string knownHosts = options_.knownHosts;
    auto resolve = [config,
                    knownHosts](const std::string& destination) -> protocol::StatusOr<app::remote::HostSpec> {
      auto spec = config.resolve(destination);
      if (spec && !knownHosts.empty()) spec->user_known_hosts_files = {knownHosts};
      return spec;
    };
    auto spec = resolve(name);
    if (!spec) return spec.status();
    auto ssh = std::make_shared<app::remote::SshHost>(name, spec.value(), ssh_->prompter, resolve);
    if (auto s = ssh->connect(); !s) return s;
    host = std::move(ssh);
  }
  hosts_[name] = host;
  return host;
}

std::string CliContext::addressOf(const std::string& name) {
  if (name == "local") return "127.0.0.1";
  if (!ssh_->config) {
    auto loaded = app::remote::SshConfig::load(configOptions(options_));
    if (!loaded) return name;
    ssh_->config = std::move(loaded.value());
  }
  auto spec = ssh_->config->resolve(name);
  return spec ? spec->hostname : name;
}

}  // namespace fs::studio::remote
