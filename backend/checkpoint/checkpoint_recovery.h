// What an interrupted checkpoint write or prune leaves in the run directory,
// and the start-up step that puts it right.
//
// NOTE [Replacing a sharded checkpoint]: a sharded checkpoint is a directory,
// and rename(2) cannot put a directory over a non-empty one. Writing
// `checkpoint_step8.pt/` (the steps, each one WriteEnv operation):
//   1. remove a leftover `.checkpoint_step8.pt.partial/`, create it, sync the run directory;
//   2. every writer puts its rank file in it (temp, fsync, rename, sync);
//   3. rank 0 writes index.json into it the same way: from here it is complete;
//   4. when `checkpoint_step8.pt/` exists: rename it to `.checkpoint_step8.pt.old/`;
//   5. rename the partial directory to `checkpoint_step8.pt/`, sync the run directory;
//   6. remove `.checkpoint_step8.pt.old/` and sync.
// A crash between 4 and 5 leaves no directory of that name: only `.old` and
// the complete `.partial`. recoverCheckpointLeftovers (rank 0, at start-up,
// before the newest-checkpoint scan) finishes what was cut short:
//   - a complete `.partial` (index.json names rank files that all exist) whose
//     name is free is moved into place (the newer checkpoint);
//   - any other `.partial` is removed (its write never completed);
//   - `.old` is removed when its name exists, else renamed back (restored);
//   - `.pruned` (a checkpoint being pruned, step checkpoints' keep_last) and
//     temporary files `.<name>.tmp-<pid>-<n>` are removed.
// Each action is one line in `notes`, naming the path, which the
// Checkpointer logs and emits as a `checkpoint_recovered` warning. Pruning
// renames a directory aside to `.pruned` before removing its files, so a cut
// prune never leaves a half-removed checkpoint under its own name.
//
// Thread-safety: free functions; only one process may change the run
// directory's checkpoints meanwhile (rank 0 at start-up, before any write).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "backend/protocol/io/write_env.h"
#include "backend/protocol/status.h"

namespace fs::checkpoint {

// ".<name>.partial", ".<name>.old", ".<name>.pruned" next to `checkpoint`.
std::filesystem::path shardedPartialName(const std::filesystem::path& checkpoint);
std::filesystem::path shardedOldName(const std::filesystem::path& checkpoint);
std::filesystem::path prunedName(const std::filesystem::path& checkpoint);

// Removes a checkpoint file or directory so that a crash leaves it whole or
// gone: a file is unlinked, a directory renamed to prunedName first. Syncs the
// run directory. A missing path is not an error.
protocol::Status removeCheckpoint(const std::filesystem::path& checkpoint, protocol::WriteEnv& env);

// The start-up step of NOTE [Replacing a sharded checkpoint]. Appends one
// line per action to `notes`. IOError names the path it could not change.
protocol::Status recoverCheckpointLeftovers(const std::filesystem::path& runDir, protocol::WriteEnv& env,
                                            std::vector<std::string>* notes);

}  // namespace fs::checkpoint
