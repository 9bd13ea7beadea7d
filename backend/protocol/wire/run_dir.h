// The run directory layout (docs/run-directory.md) and crash-safe file writes.
//
//   <run_root>/<run_name>/
//     config.yaml        resolved config, written once at start
//     run.json           manifest (run_manifest.h)
//     events.jsonl       telemetry from rank 0 (event_codec.h)
//     agent-<node>.jsonl node agent events
//     control/           commands, one file each (control_file.h); control/done/ after use
//     logs/rank-<r>.log  each rank's log
//     checkpoint_<epoch>.pt, checkpoint_step<step>.pt, checkpoint_final.pt
//
// Every file another process may read while it is being replaced (run.json, control
// files, checkpoints) is written with atomicWriteFile: a temporary name in the same
// directory starting with '.', fsync, rename, fsync of the directory. A reader sees the
// old file or the new one, never a torn one, and after a crash at most a stray
// temporary file remains (removeStaleTempFiles). Every change goes through a
// WriteEnv (NOTE [One seam for file writes] in io/write_env.h; null: the real one).
//
// Thread-safety: all functions are thread-safe; RunDir is a plain value.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/io/write_env.h"
#include "backend/protocol/status.h"
#include "backend/protocol/wire/events.h"

namespace fs::protocol {

inline constexpr std::string_view kConfigFileName = "config.yaml";
// config.yaml's permissions in a run directory, local or remote, set when the file
// is created: owner only, as a pipe: command in it may carry a credential.
inline constexpr unsigned kConfigFileMode = 0600;
inline constexpr std::string_view kManifestFileName = "run.json";
inline constexpr std::string_view kEventsFileName = "events.jsonl";
inline constexpr std::string_view kControlDirName = "control";
inline constexpr std::string_view kControlDoneDirName = "done";   // inside control/
inline constexpr std::string_view kControlClaimDirName = ".seq";  // inside control/: seq claims
inline constexpr std::string_view kLogsDirName = "logs";

// "agent-<node>.jsonl". Characters of `node` outside [A-Za-z0-9._-] become '_', and a
// leading '.' too, so any host name or node rank gives a safe, visible name.
std::string agentEventsFileName(std::string_view node);
// "rank-<r>.log". REQUIRES: rank >= 0.
std::string rankLogFileName(int rank);

// Checkpoint names: kEpoch "checkpoint_<epoch>.pt" (OpenFlamingo's name), kStep
// "checkpoint_step<step>.pt", kFinal "checkpoint_final.pt".
// REQUIRES: epoch >= 0 for kEpoch, step >= 0 for kStep.
std::string checkpointFileName(CheckpointKind kind, int epoch, std::int64_t step);
struct CheckpointName {
  CheckpointKind kind = CheckpointKind::kEpoch;
  int epoch = 0;          // kEpoch only
  std::int64_t step = 0;  // kStep only
  bool operator==(const CheckpointName&) const = default;
};
// The inverse of checkpointFileName; nullopt for any other name (temporaries included).
std::optional<CheckpointName> parseCheckpointFileName(std::string_view name);

// Paths of one run directory. Holds no handles; nothing is checked on construction.
class RunDir {
 public:
  explicit RunDir(std::filesystem::path root) : root_(std::move(root)) {}

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path configFile() const { return root_ / kConfigFileName; }
  std::filesystem::path manifestFile() const { return root_ / kManifestFileName; }
  std::filesystem::path eventsFile() const { return root_ / kEventsFileName; }
  std::filesystem::path agentEventsFile(std::string_view node) const {
    return root_ / agentEventsFileName(node);
  }
  std::filesystem::path controlDir() const { return root_ / kControlDirName; }
  std::filesystem::path controlDoneDir() const { return controlDir() / kControlDoneDirName; }
  std::filesystem::path controlClaimDir() const { return controlDir() / kControlClaimDirName; }
  std::filesystem::path logsDir() const { return root_ / kLogsDirName; }
  std::filesystem::path rankLogFile(int rank) const { return logsDir() / rankLogFileName(rank); }
  std::filesystem::path checkpointFile(CheckpointKind kind, int epoch, std::int64_t step) const {
    return root_ / checkpointFileName(kind, epoch, step);
  }

  // Creates the directory and control/, control/done/, logs/ (existing ones are fine)
  // and makes the new entries durable.
  Status create(WriteEnv* env = nullptr) const;

 private:
  std::filesystem::path root_;
};

// ---- crash-safe writes ----------------------------------------------------------------

struct AtomicWriteOptions {
  unsigned mode = 0644;  // permissions of the new file (before umask)
  WriteEnv* env =
      nullptr;  // where the operations go (tests cut it: FaultWriteEnv); null: the real file system
};

// Replaces `target` with `contents` atomically: writes `tempFileName` next to it, fsyncs
// it, renames it over `target`, fsyncs the directory. On error the temporary file is
// removed and `target` is untouched. REQUIRES: target's directory exists.
Status atomicWriteFile(const std::filesystem::path& target, std::string_view contents,
                       const AtomicWriteOptions& options = {});

// Like atomicWriteFile but never replaces: false (and nothing written) when `target`
// already exists. Atomic on local file systems (renameat2 RENAME_NOREPLACE, else link).
StatusOr<bool> atomicCreateFile(const std::filesystem::path& target, std::string_view contents,
                                const AtomicWriteOptions& options = {});

// Renames `from` to `to` unless `to` exists: false (nothing moved) when it does. Does not
// sync; call fsyncDir on both parents when the move must survive a crash.
StatusOr<bool> renameNoReplace(const std::filesystem::path& from, const std::filesystem::path& to,
                               WriteEnv* env = nullptr);

// fsync a directory so a rename or new entry in it survives a power loss.
Status fsyncDir(const std::filesystem::path& dir, WriteEnv* env = nullptr);

// ".<final_name>.tmp-<pid>-<n>": hidden, unique within this process, recognisable.
std::string tempFileName(std::string_view final_name);
// True for names written by tempFileName (readers skip every name starting with '.').
bool isTempFileName(std::string_view name);
// Removes temporary files left in `dir` by a crashed writer. Only call it when no
// writer can be active in `dir` (e.g. by the run's owner at start). Fills `removed`.
Status removeStaleTempFiles(const std::filesystem::path& dir,
                            std::vector<std::filesystem::path>* removed = nullptr, WriteEnv* env = nullptr);

// Reads a whole (small) file; NotFound when it does not exist, IOError otherwise, or
// InvalidArgument when it is larger than max_bytes.
StatusOr<std::string> readSmallFile(const std::filesystem::path& path, std::size_t max_bytes = 16u << 20);

}  // namespace fs::protocol
