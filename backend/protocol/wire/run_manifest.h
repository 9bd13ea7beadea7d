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
inline constexpr int kManifestSchemaMinor = 0;
inline constexpr std::string_view kManifestSchemaVersion = "1.0";

// How the ranks were started.
enum class LauncherKind { kLocal, kSsh, kSlurm };
std::string_view toString(LauncherKind k);  // "local", "ssh", "slurm"
bool parseEnum(std::string_view text, LauncherKind* out);
std::string_view enumChoices(LauncherKind);

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
  bool operator==(const RunManifest&) const = default;
};

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
