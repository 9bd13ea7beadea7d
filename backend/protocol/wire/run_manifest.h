// run.json: what a run is and where it stands, readable without decoding events.
//
// Written by the engine (rank 0, or the launcher before ranks exist) at start and at
// every state change, always atomically (run_dir.h), so a client listing runs never
// reads a torn manifest. Clients only read it. Format: docs/run-directory.md.
//
// Thread-safety: plain values and stateless functions. Concurrent writers of one
// manifest are not coordinated: only the run's engine writes it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/events.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::protocol {

inline constexpr int kManifestSchemaMajor = 1;
inline constexpr int kManifestSchemaMinor = 1;
inline constexpr std::string_view kManifestSchemaVersion = "1.1";  // 1.1: attempts

// How the ranks were started.
enum class LauncherKind { kLocal, kSsh, kSlurm };
std::string_view toString(LauncherKind k);  // "local", "ssh", "slurm"
bool parseEnum(std::string_view text, LauncherKind* out);
std::string_view enumChoices(LauncherKind);

// One start of the engine on this run directory (NOTE [Restarts] in backend/launch/node_agent.h).
struct RunAttempt {
  int attempt = 0;                     // 0-based, run-wide: index in RunManifest::attempts
  std::int64_t started = 0;            // unix ms rank 0 began it
  std::string reason;                  // "start", "resumed", or the failure a node agent restarted after
  std::optional<int> restart;          // the agent's restart count (TORCHELASTIC_RESTART_COUNT), if any
  std::optional<int> max_restarts;     // the agent's --max-restarts, if any
  std::optional<std::int64_t> failed;  // unix ms the agent saw the failure (restarts only)
  bool operator==(const RunAttempt&) const = default;
};

// What a starting rank 0 learns of its attempt from the node agent's variables
// (TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS, FLAMINGO_RESTART_REASON,
// FLAMINGO_RESTART_FAILED_MS); `getenv` is the lookup (null: none set).
struct AttemptEnvironment {
  std::optional<int> restart, max_restarts;
  std::optional<std::int64_t> failed;
  std::string reason;
};
AttemptEnvironment attemptEnvironment(const char* (*getenv)(const char*));

struct RunManifest {
  std::string run_id;
  // Version the file was written with; encodeManifest always writes this build's.
  std::string schema_version = std::string(kManifestSchemaVersion);
  std::string engine_version;
  std::int64_t created = 0;  // unix ms
  int world_size = 1;
  int nnodes = 1;
  int nproc_per_node = 1;
  std::vector<std::string> hosts;  // one per node, node rank order; empty until known
  LauncherKind launcher = LauncherKind::kLocal;
  RunState state = RunState::kStarting;
  std::optional<std::int64_t> pid;                         // rank 0's process id, on hosts[0]
  std::optional<std::int64_t> agent_pid;                   // launcher / node agent process id, on hosts[0]
  std::int64_t updated = 0;                                // unix ms of the last write
  std::string config_file = std::string(kConfigFileName);  // relative to the run directory
  std::vector<RunAttempt> attempts;                        // every start, oldest first (1.1; empty before)
  bool operator==(const RunManifest&) const = default;
};

// Appends this start to m->attempts: attempt = its index; reason the agent's, else "start"
// for a run's first start and "resumed" for a later one without an agent restart.
void recordAttempt(RunManifest* m, const AttemptEnvironment& env, std::int64_t now_ms);

// OK, or InvalidArgument naming the first inconsistent field (e.g. world_size must be
// nnodes x nproc_per_node; hosts, when given, one per node).
Status validateManifest(const RunManifest& m);

// Pretty-printed JSON object ending in '\n'. REQUIRES: validateManifest(m) is OK (not
// checked here; writeManifest checks).
std::string encodeManifest(const RunManifest& m);
// Parses run.json text. Unknown fields are ignored; a newer major schema_version is
// rejected ("run.json: schema version 2.0 is newer than this reader (1.x); update
// Flamingo Studio"); missing or mistyped fields are named. `source` prefixes messages.
StatusOr<RunManifest> decodeManifest(std::string_view text, std::string_view source = kManifestFileName);

// <run_dir>/run.json. NotFound when there is none (not a run directory, or too early).
StatusOr<RunManifest> readManifest(const std::filesystem::path& run_dir);
// Validates, then replaces <run_dir>/run.json atomically.
Status writeManifest(const std::filesystem::path& run_dir, const RunManifest& m,
                     const AtomicWriteOptions& options = {});
// Reads run.json, sets state and updated = now_ms, writes it back (through `env`; null:
// the real file system); returns the result.
StatusOr<RunManifest> updateManifestState(const std::filesystem::path& run_dir, RunState state,
                                          std::int64_t now_ms, WriteEnv* env = nullptr);

}  // namespace fs::protocol
