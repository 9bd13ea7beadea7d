// agentsAliveCheck: whether a remote run's process still runs, judged by the node
// agents its launch.json records (app/launch/ssh/remote_agent.h probeAgent), for a
// RunFollower's FollowOptions::process_alive.
//
// NOTE [Remote dead-process check]
// run.json's pid is rank 0's pid on hosts[0]; from another machine it cannot be
// checked safely (the pid may have been reused). launch.json records each node
// agent by identity (pid, boot id, start ticks), so the check probes those: the run
// is alive while any agent is alive, dead when every agent is gone, reused or its
// host rebooted, and unknown (nullopt) when there is no launch.json yet (it is
// written after the agents started; a local or SLURM run has no agents to probe)
// or a host cannot be reached. launch.json is read once and cached: it is written
// once. Node 0 is probed on the Host the run is followed through; the others on
// Hosts `open` gives by the names launch.json holds.
//
// Ownership: the returned function holds `attached` and `open` (shared).
// Thread-safety: the function blocks (remote commands, opening hosts) and calls
// from several threads are serialised; a follower runs it through
// aliveCheckInBackground (NOTE [Liveness checks off the follower thread]).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "app/launch/ssh/ssh_launch.h"
#include "app/remote/remote_host.h"
#include "backend/protocol/wire/run_manifest.h"

namespace fs::app::cluster {

using ProcessAliveFn = std::function<std::optional<bool>(const protocol::RunManifest&)>;

// The check for the run in `runDir` (absolute on `attached`). `open` may be null:
// then only node 0 is probed and other nodes count as unknown.
ProcessAliveFn agentsAliveCheck(std::shared_ptr<remote::Host> attached, std::string runDir, HostOpener open);

}  // namespace fs::app::cluster
