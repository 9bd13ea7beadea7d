// FaultWriteEnv: a WriteEnv that passes every operation to another one, counts
// those on the paths it watches, and at operation N either fails it with an
// IOError or stops the process there, before the operation happens, as a
// crash would (NOTE [Cutting a write sequence]).
//
// NOTE [Cutting a write sequence]: a crash-safe write is a sequence of
// operations (create temp, append, sync, close, rename, sync dir; for a
// sharded checkpoint also mkdir, renames aside and removals). Tests iterate
// N over every operation of a sequence: with kFail the writer must stop with
// an error naming the path and leave the previous checkpoint whole; with
// kCrash the process dies (crash() must not return: SIGKILL by default, or
// _exit in a forked test child), and the next start must find the newest
// complete checkpoint intact and resume exactly. The trainer hands such an
// env to its Checkpointer alone (TrainerOptions::checkpointWriteEnv), so N
// counts the checkpoint sequence only, never the telemetry writer thread's
// timing-dependent appends. The real process is killed this way by
// flamingo-train's FS_FAULT_WRITE (NOTE [Fault injection] in
// backend/trainer/fault_injection.h). Data appended but not yet synced is
// not dropped at a crash (the page cache survives a killed process; a power
// loss is not modelled).
//
// Thread-safety: all methods are thread-safe (one mutex around the count).
// Ownership: `base` must outlive this env.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "backend/protocol/io/write_env.h"

namespace fs::protocol {

class FaultWriteEnv : public WriteEnv {
 public:
  enum class Action { kFail, kCrash };
  struct Options {
    std::int64_t at = 0;  // 1-based index of the counted operation to cut; 0: never
    Action action = Action::kFail;
    // Which paths count (for a rename: its source); null: all.
    std::function<bool(const std::filesystem::path&)> watch;
    // kCrash: how the process dies. Must not return; null: raise(SIGKILL).
    std::function<void()> crash;
  };

  FaultWriteEnv(WriteEnv& base, Options options);

  // Counted operations so far (the cut one included).
  std::int64_t count() const;
  // "create <path>", "append <path>", ... for each counted operation, in order.
  std::vector<std::string> trace() const;
  // True once the operation at `at` was failed.
  bool failed() const;

  StatusOr<std::unique_ptr<WritableFile>> createFile(const std::filesystem::path& path, unsigned mode,
                                                     bool* exists = nullptr) override;
  StatusOr<std::unique_ptr<WritableFile>> openAppend(const std::filesystem::path& path,
                                                     bool* created) override;
  Status rename(const std::filesystem::path& from, const std::filesystem::path& to) override;
  StatusOr<bool> renameNoReplace(const std::filesystem::path& from, const std::filesystem::path& to) override;
  Status remove(const std::filesystem::path& path) override;
  Status createDir(const std::filesystem::path& path) override;
  Status syncDir(const std::filesystem::path& dir) override;

  // Counts one operation named `op` on `path` (when watched); an error when it is the one to fail.
  // Public for the files this env hands out.
  Status check(const char* op, const std::filesystem::path& path, const std::filesystem::path& to = {});

 private:
  WriteEnv& base_;
  Options options_;
  mutable std::mutex mu_;
  std::int64_t count_ = 0;
  bool failed_ = false;
  std::vector<std::string> trace_;
};

}  // namespace fs::protocol
