// A shard URL opened as a forward-only byte stream: a local file path, or
// "pipe:<command>" (run with /bin/sh -c; its stdout is the stream), as
// webdataset accepts them. Shard lists come from protocol::expandShards; this
// file only opens one entry of such a list.
//
// Thread-safety: one stream is used by one thread at a time (a data worker
// reads one shard at a time); different streams are independent.
// Ownership: the stream owns its file descriptor or child process; close()
// or destruction releases it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "backend/data/shards/read_interrupt.h"
#include "backend/protocol/status.h"

namespace fs::data {

// NOTE [Pipe shards]
// The command runs in its own process group with stdin from /dev/null and
// default SIGPIPE, so `pipe:ssh h cat x.tar | zcat` behaves as in a shell.
// Its stderr is read alongside stdout (so a chatty command never blocks on a
// full stderr pipe) and only the last kStderrTailBytes are kept, for the
// error message. Reaching the end of stdout waits for the command to exit:
// a non-zero exit or death by a signal turns that end into an error naming
// the command and its stderr tail. close() before the end (or destruction)
// sends SIGTERM to the whole group, SIGKILL after kKillGrace, and reaps the
// child, so an abandoned shard leaves neither a zombie nor a running command.
// An early close is not an error: the caller asked for it. A ReadInterrupt
// given at open wakes a read (or the wait for the command's exit) from
// another thread: that read and every later one fail with "interrupted".
class ShardStream {
 public:
  static constexpr size_t kStderrTailBytes = 4096;
  static constexpr int kKillGraceMs = 2000;

  virtual ~ShardStream() = default;

  // Reads up to `size` bytes into `buf`; fewer is normal. 0 = end of stream.
  // Errors (I/O, a failed pipe command) are sticky: later reads repeat them.
  // REQUIRES: size > 0, not closed.
  virtual protocol::StatusOr<size_t> read(void* buf, size_t size) = 0;

  // Releases the file or stops the command (see NOTE [Pipe shards]).
  // Idempotent; the destructor calls it.
  virtual void close() = 0;

  // The URL as given to openShardStream, for messages.
  virtual const std::string& url() const = 0;
};

// Opens a local file or starts a pipe command. Errors: the file cannot be
// opened, "pipe:" with an empty command, or the process cannot be spawned.
// A command that fails after starting is reported by read() (it may have
// produced output first). `interrupt` (may be null) must outlive the stream.
protocol::StatusOr<std::unique_ptr<ShardStream>> openShardStream(const std::string& url,
                                                                 const ReadInterrupt* interrupt = nullptr);

// Opens `path` as a local file, whatever its text: "pipe:x" is a file named so,
// never a command. For shard lists that are paths by construction (the
// generated shards of data.source generated: NOTE [Run directory text] in
// backend/protocol/config/run_location.h).
protocol::StatusOr<std::unique_ptr<ShardStream>> openShardFile(const std::string& path);

// True for "pipe:<command>" URLs.
bool isPipeUrl(const std::string& url);

}  // namespace fs::data
