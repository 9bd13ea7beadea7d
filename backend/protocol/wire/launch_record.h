// launch.json: how an SSH or SLURM launcher started a run, for whoever attaches later.
//
// Written once by the launcher (the app), atomically, after every node agent has
// started (SSH) or the job was submitted (SLURM); never by the engine. It names the
// hosts and, per node, the agent's pid with its boot id and start time, so stop and
// kill signal the process that was started and never a process that reused its pid
// (NOTE [Agent identity] in app/launch/ssh/remote_agent.h). Format: docs/run-directory.md.
//
// NOTE [Why not run.json]
// run.json has one writer, the engine's rank 0, which rewrites it at every state
// change. A launcher adding fields to it after the agents started would race with
// rank 0's first write and could lose either side's update; a file of its own, written
// once, cannot.
//
// Thread-safety: plain values and stateless functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/run_manifest.h"

namespace fs::protocol {

inline constexpr std::string_view kLaunchRecordFileName = "launch.json";
inline constexpr int kLaunchRecordSchemaMajor = 1;
inline constexpr int kLaunchRecordSchemaMinor = 0;
inline constexpr std::string_view kLaunchRecordSchemaVersion = "1.0";

// One node's agent (SSH launches).
struct LaunchedNode {
  int node_rank = 0;
  std::string host;     // as the user named it: ssh_config alias or [user@]host[:port]
  std::string address;  // the node's own name (uname -n) when its agent started, for messages
  std::int64_t agent_pid = 0;
  std::string boot_id;           // /proc/sys/kernel/random/boot_id when it started
  std::int64_t start_ticks = 0;  // field 22 of /proc/<pid>/stat: start time in clock ticks after boot
  std::int64_t started = 0;      // unix ms (the launcher's clock)
  bool operator==(const LaunchedNode&) const = default;
};

// A SLURM submission.
struct LaunchedJob {
  std::string login;   // the host sbatch ran on ("local" when the app runs on the login node)
  std::string job_id;  // as sbatch --parsable printed it
  std::string script;  // file name of the submitted script inside the run directory
  bool operator==(const LaunchedJob&) const = default;
};

struct LaunchRecord {
  std::string schema_version = std::string(kLaunchRecordSchemaVersion);
  LauncherKind launcher = LauncherKind::kSsh;  // kSsh or kSlurm
  std::string run_dir;                         // absolute, as the hosts see it
  std::int64_t created = 0;                    // unix ms
  std::optional<bool> shared_fs;               // run root seen by every node (nonce check); unset: one node
  std::vector<LaunchedNode> nodes;             // SSH: one per node, node rank order
  std::optional<LaunchedJob> slurm;            // SLURM only
  bool operator==(const LaunchRecord&) const = default;
};

// OK, or InvalidArgument naming the first bad field (e.g. "nodes[1].agent_pid is 0").
Status validateLaunchRecord(const LaunchRecord& r);
// Pretty-printed JSON ending in '\n'. REQUIRES: validateLaunchRecord(r) is OK.
std::string encodeLaunchRecord(const LaunchRecord& r);
// Parses launch.json text; a newer major version is refused; `source` prefixes messages.
StatusOr<LaunchRecord> decodeLaunchRecord(std::string_view text,
                                          std::string_view source = kLaunchRecordFileName);

}  // namespace fs::protocol
