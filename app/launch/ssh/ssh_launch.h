// An SSH launch, step by step: run directory, config upload, shared-filesystem
// check, one detached node agent per host, launch.json. The launcher (ssh_launcher.h)
// runs it on a worker thread; the headless CLI runs it directly.
//
// Every step blocks on Hosts and reports progress; `cancel` is checked between
// steps. On failure after agents started, those agents are stopped (SIGTERM, by
// identity) before the error is returned, so a failed launch leaves no ranks behind.
// The run directory is left in place with what was written, for the logs.
//
// Thread-safety: stateless functions; one launch per call.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/remote/remote_host.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"
#include "backend/protocol/wire/launch_record.h"

namespace fs::app::cluster {

struct SshLaunchPlan {
  protocol::RunConfig config;  // resolved and valid; launch.kind == "ssh", one host per node
  std::string runRoot;         // on the hosts; relative = under the login directory
  std::string runName;         // directory base name (sanitised); "-2", "-3"... when taken
  std::string engine;          // flamingo-train on the hosts: a path, or a name found on the login PATH
  bool allowPipe = false;      // ranks get --allow-pipe (LaunchRequest::allowPipe)
};

// Opens (or returns the open) Host for a name in launch.hosts.
using HostOpener = std::function<protocol::StatusOr<std::shared_ptr<remote::Host>>(const std::string& host)>;
using ProgressFn = std::function<void(const std::string& message)>;

struct SshLaunchResult {
  protocol::LaunchRecord record;  // also written to <run_dir>/launch.json
  std::vector<std::string> warnings;
};

// The agent's node name for host i (agent-<name>.jsonl, logs/agent-<name>.log): the
// host as written, or "<host>-<i>" when the same host runs several nodes.
std::string nodeName(const std::vector<std::string>& hosts, std::size_t i);

// The environment node agents get on top of the login one, and pass on to their ranks:
// OMP_NUM_THREADS from launch.threads_per_rank when set (NOTE [Threads per rank] in
// ssh_launch.cpp), then launch.env (NOTE [Launch environment], launch_env.h), "NAME=VALUE" each.
std::vector<std::string> agentEnvironment(const protocol::RunConfig& config);

// The argv of node i's agent (flamingo-train launch ... -- train ...).
std::vector<std::string> agentArgv(const SshLaunchPlan& plan, const std::string& runDir, std::size_t node);

protocol::StatusOr<SshLaunchResult> launchOverSsh(const SshLaunchPlan& plan, const HostOpener& open,
                                                  const ProgressFn& progress,
                                                  const std::atomic<bool>* cancel = nullptr);

// Makes <runRoot>/<runName> on `host` (mkdir(1): never an existing one; "-2", "-3", ...
// when taken), the run root first when missing (relative = under the login directory).
// Returns the absolute path.
protocol::StatusOr<std::string> createRunDirectory(remote::Host& host, const std::string& runRoot,
                                                   const std::string& runName);

// Reads <runDir>/launch.json on `host`.
protocol::StatusOr<protocol::LaunchRecord> readLaunchRecord(remote::Host& host, const std::string& runDir);

}  // namespace fs::app::cluster
