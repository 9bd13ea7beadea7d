// Pre-flight: before a multi-node launch, one table of checks per host (issue
// 24, item 3): the engine (found, version, protocol major), the run root (free
// disk, writable), cores and GPUs, clock skew, and whether node 0's rendezvous
// port is reachable from every node. A failing row names the host and says
// what to do.
//
// The checks run `flamingo-train version --json` and `flamingo-train probe ...`
// on each host through remote::Host::run (argument vectors only) and judge the
// JSON they print (formats: `flamingo-train probe --help`, `version --help`).
//
// Threads: runPreflight blocks (seconds; up to the timeouts below when a host
// does not answer): call it on a worker thread, never the GUI thread. It runs
// each host's checks on a thread of its own, and node 0's listener beside the
// other nodes' connection attempts. QtCore-free.
// Ownership: the caller owns the hosts; they must outlive the call.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "app/remote/remote_host.h"

namespace fs::app::cluster {

// Thresholds (NOTE [Pre-flight thresholds] in preflight_checks.cpp says why).
inline constexpr std::uint64_t kDiskWarnBytes = 10ull << 30;  // warn below 10 GiB free in the run root
inline constexpr std::uint64_t kDiskFailBytes = 1ull << 30;   // fail below 1 GiB
inline constexpr double kSkewWarnSeconds = 1.0;               // warn when clocks differ by more
inline constexpr double kSkewFailSeconds = 30.0;              // fail when they differ by more

enum class CheckStatus {
  kOk,
  kWarn,     // the launch can go ahead, but look at it
  kFail,     // the launch would fail (or mislead): fix it first
  kSkipped,  // not checked because an earlier check of the host failed (that row says why)
};
std::string_view toString(CheckStatus s);  // "ok", "warn", "fail", "skipped"

// The table's columns, in this order for every host.
enum class CheckKind { kEngine, kDisk, kResources, kClock, kRendezvous };
std::string_view toString(CheckKind k);  // "engine", "disk", "resources", "clock", "rendezvous"

struct PreflightRow {
  std::string host;  // Host::name()
  int node = 0;      // index in PreflightRequest::hosts; 0 = the rendezvous node
  CheckKind check = CheckKind::kEngine;
  CheckStatus status = CheckStatus::kOk;
  std::string value;   // what was found, e.g. "23.4 GiB free in /scratch/runs", "skew +0.8 s against node-a"
  std::string action;  // when not ok: what to do, naming the host, e.g. "node-b: flamingo-train not found
                       // on the login PATH; set the engine path for this host"
};

// Thread-safety: a plain value.
struct PreflightTable {
  std::vector<PreflightRow> rows;  // node 0's checks in CheckKind order, then node 1's, ...

  bool ok() const;            // no row failed
  CheckStatus worst() const;  // kFail > kWarn > kSkipped > kOk (an empty table is kOk)
  const PreflightRow* find(int node, CheckKind check) const;  // nullptr when absent
  // A fixed-width text table (host, check, status, value) and, below, every action.
  std::string toText() const;
};

struct PreflightHost {
  remote::Host* host = nullptr;  // not owned
  std::string engine_path;       // flamingo-train on that host; empty: by name, from the login PATH
};

struct PreflightRequest {
  std::vector<PreflightHost> hosts;  // node 0 (the rendezvous node) first; REQUIRES: hosts non-null
  std::string rendezvous_address;    // node 0's address as every node reaches it (MASTER_ADDR)
  int rendezvous_port = 29500;       // MASTER_PORT
  std::string run_root;              // the run root on the hosts (created by the launch when missing)
  int gpus_per_node = 0;             // GPUs each node needs (ranks per node on GPUs); 0: none required
  bool require_engine = true;        // fail a tools-only flamingo-train (built without LibTorch)
  int command_timeout_ms = 60'000;   // each version / probe command
  int connect_timeout_s = 10;        // each node's connection check, from its start
  int connect_wait_s = 10;  // retry refused connections this long (within connect_timeout_s): node 0's
                            // listener may start later
  const std::atomic<bool>* cancel = nullptr;  // polled by the version / probe commands
};

// Runs every check and returns the table (never an error: failures are rows).
PreflightTable runPreflight(const PreflightRequest& request);

}  // namespace fs::app::cluster
