// aliveCheckInBackground: a dead-process check (FollowOptions::process_alive) that
// never blocks its caller, made from one that may (a remote probe).
//
// NOTE [Liveness checks off the follower thread]
// The follower asks whether a live run's process still runs at every process
// check, on the thread that also reads events.jsonl and the rank logs. For a run
// on other machines the answer comes from remote commands and, for a node not yet
// connected, from opening an SSH session, which for a host that does not answer
// blocks until the connect timeout (15 s). Asked directly, that stalled following
// for as long, at every check. The wrapped check runs the blocking one on a pool
// thread instead: each call returns the answer of the last probe that finished for
// the same pid (nullopt before the first, or for another pid: a restarted run is
// not judged by its predecessor's answer) and starts the next probe when none is
// running, so at most one probe runs at a time and an answer is at most one check
// interval old. A probe that never returns leaves the answer unknown, which is
// what the follower does with "cannot tell": nothing.
//
// Ownership: the returned function and each probe in flight share the state and
// `blocking` (a probe may outlive the function; it ends when `blocking` returns).
// Thread-safety: the returned function may be called from any thread; `blocking`
// runs on QThreadPool::globalInstance()'s threads, one call at a time.
#pragma once

#include <functional>
#include <optional>

#include "backend/protocol/wire/run_manifest.h"

namespace fs::app {

using AliveCheck = std::function<std::optional<bool>(const protocol::RunManifest&)>;

// REQUIRES: blocking.
AliveCheck aliveCheckInBackground(AliveCheck blocking);

}  // namespace fs::app
