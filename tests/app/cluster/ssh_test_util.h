// Helpers of the SSH suites: Hosts opened the way the app opens them (the
// fixture's ssh_config, SshHost), a Prompter standing in for a person who is
// never asked (the fixture's known_hosts holds every key), and the tiny config.
//
// Thread-safety: SshOpener is thread-safe (launch workers call it).
#pragma once

#include <QtTest>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "../launch/launch_test_util.h"
#include "app/remote/prompter.h"
#include "app/remote/ssh_config.h"
#include "app/remote/ssh_host.h"
#include "backend/protocol/config/config_override.h"
#include "tests/fixtures/ssh_hosts.h"

namespace fs::app::test {

// Answers nothing: a test that reaches it has failed to pre-trust a key.
class NeverAsked : public remote::Prompter {
 public:
  remote::HostKeyAnswer hostKey(const remote::HostKeyQuestion&) override {
    ++asked;
    return remote::HostKeyAnswer::kReject;
  }
  std::optional<remote::Secret> passphrase(const std::string&, int) override {
    ++asked;
    return std::nullopt;
  }
  std::atomic<int> asked{0};
};

// Opens the fixture's aliases as the app does: one SshHost per name, reused.
class SshOpener {
 public:
  SshOpener(const fs::testing::SshHosts& hosts, int keepaliveS = 0) : keepaliveS_(keepaliveS) {
    remote::SshConfigOptions options;
    options.user_config = hosts.configPath();
    options.system_config.clear();
    auto loaded = remote::SshConfig::load(options);
    if (!loaded) qFatal("ssh config: %s", loaded.status().message().c_str());
    config_ = std::make_shared<remote::SshConfig>(std::move(loaded.value()));
  }

  protocol::StatusOr<std::shared_ptr<remote::Host>> open(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = hosts_.find(name); it != hosts_.end()) return it->second;
    auto config = config_;
    const int keepalive = keepaliveS_;
    auto resolve = [config, keepalive](const std::string& d) -> protocol::StatusOr<remote::HostSpec> {
      auto spec = config->resolve(d);
      if (spec && keepalive > 0) {
        spec->server_alive_interval = keepalive;
        spec->server_alive_count_max = 2;
        spec->connect_timeout = 5;
      }
      return spec;
    };
    auto spec = resolve(name);
    if (!spec) return spec.status();
    auto host = std::make_shared<remote::SshHost>(name, spec.value(), prompter, resolve);
    if (auto s = host->connect(); !s) return s;
    hosts_[name] = host;
    return std::shared_ptr<remote::Host>(host);
  }
  std::shared_ptr<remote::SshHost> ssh(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = hosts_.find(name);
    return it == hosts_.end() ? nullptr : std::dynamic_pointer_cast<remote::SshHost>(it->second);
  }
  std::function<protocol::StatusOr<std::shared_ptr<remote::Host>>(const std::string&)> function() {
    return [this](const std::string& name) { return open(name); };
  }

  std::shared_ptr<NeverAsked> prompter = std::make_shared<NeverAsked>();

 private:
  int keepaliveS_;
  std::shared_ptr<remote::SshConfig> config_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<remote::Host>> hosts_;
};

// The tiny preset, long enough to pause and checkpoint in, one intra-op thread per rank
// (the same arithmetic in every run).
inline protocol::RunConfig tinyRun(const std::vector<std::string>& more) {
  protocol::RunConfig c = tinyConfig();
  std::vector<std::string> sets = {"optim.epochs=3", "optim.warmup_steps=0", "launch.threads_per_rank=1",
                                   "checkpoint.every_steps=0", "telemetry.interval_steps=1"};
  sets.insert(sets.end(), more.begin(), more.end());
  const auto problems = protocol::applyOverrides(&c, sets);
  if (protocol::hasErrors(problems)) qFatal("overrides: %s", protocol::formatProblems(problems).c_str());
  return c;
}

// Step -> losses of a run directory on this machine's file system.
inline std::map<std::int64_t, std::map<std::string, double>> lossesByStep(const std::string& runDir) {
  std::map<std::int64_t, std::map<std::string, double>> out;
  for (const auto& s : eventsOf<protocol::StepEvent>(readEvents(QString::fromStdString(runDir))))
    out[s.step] = s.loss;
  return out;
}

}  // namespace fs::app::test
