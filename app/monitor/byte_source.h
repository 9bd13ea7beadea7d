// ByteSource: the bytes of one file a follower reads, wherever the file lives; and
// RunDirSource: the files of one run directory as ByteSources.
//
// EventTail and RankLogTail decode; a ByteSource only reads (NOTE [Sources and
// decoders]). LocalFileSource (local_file_source.h) reads a file of this machine,
// HostFileSource (host_file_source.h) one on a remote::Host (SFTP over SSH).
//
// Errors (protocol::Status): kNotFound when the file does not exist (not created
// yet, or removed); kIOError for anything the caller should report and then retry
// at its next poll from the same position (a network failure, permissions, a
// missing parent folder), with a message naming the host, the path and the offset.
//
// Thread-safety: a source is used by one thread at a time (the follower's).
//
// NOTE [Sources and decoders]
// Transport apart from decoding (style.md, item 3): the tails keep every guarantee
// of NOTE [Follow guarantees] on top of three calls, stat(), read() and, for a
// source that holds the file open, statPath() and reopen(). Replacement is told
// from the identity (device and inode) where the source knows it; a source that
// reads by path (SFTP) knows none, and then the tail tells another file from the
// one it read by its content: the file shrank below the read position, the byte
// before the next line is no longer '\n', or the file's first bytes changed
// (EventTail::kHeadBytes, kept in FollowPosition::head), or the file vanished and
// came back.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::app {

// Which file a path named when it was read (local files only).
struct FileIdentity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};

struct SourceStat {
  std::uint64_t size = 0;
  std::optional<FileIdentity> identity;  // none: the source cannot tell one file from another
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;

  // The path, or host:path, for messages.
  virtual std::string describe() const = 0;
  // Size and identity of the file read() reads. A source that holds the file open
  // goes on reading that file after another one took its path, until reopen().
  virtual protocol::StatusOr<SourceStat> stat() = 0;
  // Up to `n` bytes from `offset` into `buf`; fewer (0 at the end) when the file is
  // shorter. REQUIRES: buf holds n bytes.
  virtual protocol::StatusOr<std::size_t> read(std::uint64_t offset, char* buf, std::size_t n) = 0;
  // What the path names now, which may be another file than stat()'s (renamed over
  // it) or none (kNotFound: removed). Sources that read by path: stat().
  virtual protocol::StatusOr<SourceStat> statPath() { return stat(); }
  // Lets go of the file held open: the next call reads what the path names then.
  virtual void reopen() {}
};

// A run directory whose files are ByteSources: local, or on a remote::Host.
// Thread-safety: used by one thread at a time (the follower's).
class RunDirSource {
 public:
  virtual ~RunDirSource() = default;

  // The directory, or host:directory, for messages.
  virtual std::string describe() const = 0;
  // A source for `relativePath` (e.g. "events.jsonl", "logs/rank-0.log"); the file
  // need not exist yet.
  virtual std::unique_ptr<ByteSource> open(const std::string& relativePath) = 0;
  // The names of the entries of `relativeDir`; kNotFound when it does not exist.
  virtual protocol::StatusOr<std::vector<std::string>> list(const std::string& relativeDir) = 0;
};

// The whole of a small file (run.json), at most `max` bytes; kInvalidArgument when
// it is larger, kNotFound when missing.
protocol::StatusOr<std::string> readWhole(ByteSource& source, std::size_t max);

}  // namespace fs::app
