// Host: a machine the app runs commands on and reads and writes files of — this
// one (LocalHost, local_host.h) or one reached over SSH (SshHost, ssh_host.h).
//
// Launchers, pre-flight checks, SLURM and remote following are written against
// this interface, so the same code serves a login node the app runs on and a
// cluster reached over SSH.
//
// Every call blocks: call it on a worker thread, never the GUI thread.
// Errors (protocol::Status): kNotFound for a missing file or directory;
// kIOError for anything else, with a message naming the host and the path or
// command; connection losses are kIOError and connected() turns false until a
// later call reconnects. Commands are argument vectors; a Host never takes a
// shell line (NOTE [Remote command lines] in shell_quote.h).
//
// Thread-safety: implementations are thread-safe; calls from several threads
// are serialised or multiplexed (channels of one SSH session) by them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::app::remote {

struct ExecOptions {
  std::string stdin_data;                     // written to the command's stdin, then EOF
  int timeout_ms = 60'000;                    // the command is ended (and kIOError returned) after this
  std::size_t max_output = 16u << 20;         // stdout and stderr each; more is cut, and says so
  const std::atomic<bool>* cancel = nullptr;  // polled; set: the command is ended, kIOError "cancelled"
};

struct CommandResult {
  int exit_code = -1;  // -1 when it ended by a signal
  std::string signal;  // e.g. "KILL"; empty when it exited
  std::string out;
  std::string err;
};

// Bytes [offset, offset + length) of a file (Host::readRanges).
struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

struct FileInfo {
  std::string name;  // base name (list) or the path asked for (stat)
  std::uint64_t size = 0;
  std::int64_t mtime = 0;  // unix seconds
  bool is_dir = false;
  std::uint32_t mode = 0;  // permission bits
};

// A command's stdout, read as it comes (Host::openStream). Destroying it ends the
// command (its stdin and stdout are closed; NOTE [Streams] in local_host.h).
// Thread-safety: one thread at a time; the Host must outlive it.
class CommandStream {
 public:
  virtual ~CommandStream() = default;
  // Appends up to `max` bytes of stdout to `out`, waiting up to `timeout_ms` for
  // the first; 0 when none came in time. kIOError once stdout ended (the message
  // names the host, the command, how it ended and the end of its stderr) or the
  // connection failed; the stream is then done.
  virtual protocol::StatusOr<std::size_t> read(std::string& out, std::size_t max, int timeout_ms) = 0;
};

class Host {
 public:
  virtual ~Host() = default;

  // "local", or the ssh_config alias / host as the user wrote it.
  virtual std::string name() const = 0;
  // False after a connection loss, until a call reconnects (always true locally).
  virtual bool connected() const = 0;

  // Runs argv[0] (found in the login shell's PATH) with the arguments verbatim.
  virtual protocol::StatusOr<CommandResult> run(const std::vector<std::string>& argv,
                                                const ExecOptions& options = {}) = 0;
  // At most `max` bytes from `offset` on; fewer (or none) at the end of the file.
  virtual protocol::StatusOr<std::string> readFile(const std::string& path, std::uint64_t offset,
                                                   std::size_t max) = 0;
  // The bytes of each range, in order, each shorter (or empty) where the file ends
  // before it. Over SSH the requests of every range are sent before the answers are
  // awaited (one round trip for many small ranges: a checkpoint's index).
  virtual protocol::StatusOr<std::vector<std::string>> readRanges(const std::string& path,
                                                                  const std::vector<ByteRange>& ranges);
  virtual protocol::StatusOr<FileInfo> stat(const std::string& path) = 0;
  // The entries of a directory, without "." and "..".
  virtual protocol::StatusOr<std::vector<FileInfo>> list(const std::string& dir) = 0;
  // Writes a temporary file beside `path` (a name starting with '.'), then renames
  // it over `path`: a reader sees the old file or the new one, never a torn one.
  virtual protocol::Status writeFileAtomic(const std::string& path, std::string_view bytes,
                                           std::uint32_t mode = 0644) = 0;
  // Like writeFileAtomic, but never replaces: false, and nothing written, when `path`
  // exists (control files: two clients never overwrite each other's command).
  virtual protocol::StatusOr<bool> writeFileIfAbsent(const std::string& path, std::string_view bytes,
                                                     std::uint32_t mode = 0644) = 0;
  // Like mkdir -p.
  virtual protocol::Status makeDirs(const std::string& path) = 0;
  virtual protocol::Status remove(const std::string& path) = 0;
  // Starts argv like run(), with its stdin held open, and hands its stdout over as
  // it comes; the command runs until the stream is destroyed (or it exits).
  virtual protocol::StatusOr<std::unique_ptr<CommandStream>> openStream(
      const std::vector<std::string>& argv) {
    return protocol::Status::ioError(name() + ": cannot stream '" + (argv.empty() ? "" : argv[0]) +
                                     "' (this host runs whole commands only)");
  }
};

}  // namespace fs::app::remote
