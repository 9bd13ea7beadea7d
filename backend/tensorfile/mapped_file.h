// A read-only view of a whole file's bytes: mmap of a local file, or bytes
// already in memory (a remote file fetched over SFTP, a test buffer).
//
// Ownership: a MappedFile owns its mapping or buffer and releases it on
// destruction; it is move-only, and moving it keeps bytes() at the same address
// (spans into it stay valid across moves, not past destruction).
// Thread-safety: const methods may be called from any thread.
//
// NOTE [Mapped files and truncation]
// A file that is truncated by another process while mapped makes reads past
// the new end fault (SIGBUS). Checkpoints are written to a temporary name and
// renamed (backend/protocol/wire/run_dir.h), so a reader keeps the old inode intact;
// do not map files that are rewritten in place.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::tensorfile {

using fs::protocol::Status;
using fs::protocol::StatusOr;

class MappedFile {
 public:
  // Maps `path` read-only. Errors: NotFound / IOError naming the path and the
  // system's reason ("checkpoint.pt: No such file or directory").
  static StatusOr<MappedFile> open(const std::string& path);
  // Wraps bytes held in memory; `name` stands in for the path in messages.
  static MappedFile fromBytes(std::string name, std::vector<std::byte> bytes);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  // Unmaps the pages this process has touched so far from its page tables
  // (MADV_DONTNEED on the read-only mapping): they stay in the page cache and
  // fault back on the next read, so bytes() and spans into it stay valid.
  // In-memory bytes (fromBytes) are left alone. NOTE [Index pages let go].
  void dropResidentPages() const;
  std::size_t size() const { return size_; }
  // The path given to open(), or the name given to fromBytes().
  const std::string& path() const { return path_; }

 private:
  void release();

  std::string path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool mapped_ = false;            // data_ came from mmap
  std::vector<std::byte> buffer_;  // fromBytes() storage
};

// NOTE [Index pages let go]
// Reading an index touches scattered pages of a mapped file (zip local
// headers, the pickle), and the kernel maps whole neighbourhoods of pages
// around each fault: opening a warm 1 GiB checkpoint left 170 MB of it counted
// as this process's resident memory. They are clean file pages, so the
// indexer lets them go once the index is read (bench/inspect).

// Asks the kernel to start reading the pages under `bytes` (madvise WILLNEED),
// without waiting; a hint only, ignored for memory that is not a file mapping.
void adviseWillNeed(std::span<const std::byte> bytes);

}  // namespace fs::tensorfile
