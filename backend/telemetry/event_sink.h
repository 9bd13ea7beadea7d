// Where the telemetry writer thread puts encoded event lines: an append-only file
// (events.jsonl, agent-<node>.jsonl) or, in tests, anything that implements EventSink.
//
// NOTE [Resuming an append-only event file]
// A crash can leave at most one partial last line (the writer appends whole lines;
// docs/run-directory.md "Crash safety"). FileEventSink::open on an existing file
//  1. cuts everything after the last '\n' (the decoder's resumeOffset()) and syncs,
//  2. walks back from the end to the last complete line that carries a readable `seq`
//     (blank or garbled lines are stepped over) and reports seq + 1 as the next seq.
// Only the file's tail is read, so reopening a long run's file is cheap.
//
// Thread-safety: an EventSink is used by one thread at a time (the writer thread).
// Ownership: FileEventSink owns its file and closes it on destruction.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

#include "backend/protocol/io/write_env.h"
#include "backend/protocol/status.h"

namespace fs::telemetry {

using protocol::Status;
using protocol::StatusOr;

class EventSink {
 public:
  virtual ~EventSink() = default;
  // Appends `lines`: one or more whole lines, each ending in '\n'. Either all of them
  // are appended, or an error is returned and none are (a failed append is cut back;
  // only a crash of the process can leave a partial last line behind).
  virtual Status append(std::string_view lines) = 0;
  // Makes everything appended so far durable (WritableFile::sync for files).
  virtual Status sync() = 0;
};

// What FileEventSink::open found in an existing file.
struct EventFileResume {
  bool existed = false;               // the file was there (and not empty)
  std::uint64_t next_seq = 0;         // seq the next event must carry (last seq + 1, else 0)
  std::uint64_t size = 0;             // bytes kept (after cutting a partial line)
  std::uint64_t truncated_bytes = 0;  // bytes of a partial last line that were cut
};

// Appends to one file, opened O_APPEND; see NOTE [Resuming an append-only event file].
class FileEventSink : public EventSink {
 public:
  // Opens `path` for appending, creating it (mode 0644, entry synced) if needed. An
  // existing file is repaired and scanned as the note describes. IOError names the path.
  // Every change goes through `env` (null: the real file system; io/write_env.h).
  static StatusOr<std::unique_ptr<FileEventSink>> open(const std::filesystem::path& path,
                                                       protocol::WriteEnv* env = nullptr);
  ~FileEventSink() override;
  FileEventSink(const FileEventSink&) = delete;
  FileEventSink& operator=(const FileEventSink&) = delete;

  const EventFileResume& resume() const { return resume_; }
  const std::filesystem::path& path() const { return path_; }
  std::uint64_t size() const { return size_; }

  Status append(std::string_view lines) override;
  Status sync() override;

 private:
  FileEventSink(std::filesystem::path path, std::unique_ptr<protocol::WritableFile> file,
                EventFileResume resume);
  std::filesystem::path path_;
  std::unique_ptr<protocol::WritableFile> file_;
  std::uint64_t size_ = 0;  // bytes in the file after our last successful append
  EventFileResume resume_;
};

// The seq to continue with in the first `size` bytes of `fd` (which must end in '\n' or
// be empty): 1 + the seq of the last complete line that has one, 0 when none has.
// `source` names the file in errors. Exposed for tests and tools.
StatusOr<std::uint64_t> scanNextSeq(int fd, std::uint64_t size, std::string_view source);

}  // namespace fs::telemetry
