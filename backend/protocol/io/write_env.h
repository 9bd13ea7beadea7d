// WriteEnv: every file-system change the engine and the run directory make
// (create, append, sync, close, rename, remove, directory create and sync) goes
// through this one interface, so a test can cut a write sequence short at any
// operation, as a crash or a failing disk would (fault_write_env.h).
//
// NOTE [One seam for file writes]: leveldb keeps its file system behind an Env
// for the same reason. Reads are not part of the seam: they change nothing a
// crash could tear. Code that writes takes a WriteEnv* (null = the real file
// system, posixWriteEnv()) from its caller or options struct; nothing reaches
// for a global that tests would have to swap behind its back. The crash-safe
// helpers (atomicWriteFile in run_dir.h, removeTree below) are built on it, so
// each of their steps is one operation a test can stop at.
//
// Thread-safety: posixWriteEnv() is stateless and thread-safe. A WritableFile
// is used by one thread at a time. Ownership: a WritableFile owns its
// descriptor and closes it on destruction (errors then ignored: call close()).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

#include "backend/protocol/status.h"

namespace fs::protocol {

// One open file being written.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Appends all of `data` (retrying short writes); on error part of it may be there.
  virtual Status append(std::string_view data) = 0;
  // Makes the contents durable (fsync).
  virtual Status sync() = 0;
  // Cuts the file to `size` bytes (used to drop a partial append).
  virtual Status truncate(std::uint64_t size) = 0;
  // Closes the descriptor. REQUIRES: called at most once; nothing after it.
  virtual Status close() = 0;
};

class WriteEnv {
 public:
  virtual ~WriteEnv() = default;

  // Creates `path`, which must not exist (O_EXCL), for writing. Its directory
  // entry is not durable until syncDir(parent). `exists` (when given) is set
  // when the call failed only because the path exists.
  virtual StatusOr<std::unique_ptr<WritableFile>> createFile(const std::filesystem::path& path, unsigned mode,
                                                             bool* exists = nullptr) = 0;
  // Opens `path` for appending, creating it (mode 0644) when missing; `created` says which.
  virtual StatusOr<std::unique_ptr<WritableFile>> openAppend(const std::filesystem::path& path,
                                                             bool* created) = 0;
  // rename(2): replaces a file `to`, or an empty directory `to`.
  virtual Status rename(const std::filesystem::path& from, const std::filesystem::path& to) = 0;
  // Like rename, but false (nothing moved) when `to` exists.
  virtual StatusOr<bool> renameNoReplace(const std::filesystem::path& from,
                                         const std::filesystem::path& to) = 0;
  // Removes a file or an empty directory. A missing path is not an error.
  virtual Status remove(const std::filesystem::path& path) = 0;
  // Creates one directory (mode 0755); an existing directory is not an error.
  virtual Status createDir(const std::filesystem::path& path) = 0;
  // fsync of a directory, so entries created, renamed or removed in it survive a power loss.
  virtual Status syncDir(const std::filesystem::path& dir) = 0;
};

// The real file system: POSIX calls and real fsyncs.
WriteEnv& posixWriteEnv();

// `env`, or the real file system when null: how options structs carry their env.
inline WriteEnv& writeEnvOr(WriteEnv* env) {
  return env ? *env : posixWriteEnv();
}

// The parent directory of `path` ("." for a bare name), the one to syncDir after changing `path`.
std::filesystem::path parentDir(const std::filesystem::path& path);

// Removes `path` and, for a directory, everything in it, deepest entries first,
// each removal one WriteEnv operation (a crash leaves a partly emptied tree).
// Listing reads the real file system. A missing path is not an error.
Status removeTree(WriteEnv& env, const std::filesystem::path& path);

// Creates `dir` and its missing parents, syncing each parent after a new entry.
Status createDirsDurably(WriteEnv& env, const std::filesystem::path& dir);

}  // namespace fs::protocol
