// StreamFileSource: a ByteSource over a file on a remote::Host, followed by the
// engine's `flamingo-train stream` through Host::openStream (an exec channel over
// SSH, a child process locally); StreamRunDir: a run directory whose files are
// followed so (its listings are the Host's).
//
// The stream pushes the file's bytes as it grows, with the file's identity and
// size (NOTE [Stream format] in backend/cli/cmd_stream.cpp), so the tails detect
// replacement as for local files; NOTE [Following over a stream] says how reads
// map onto it.
//
// The Host is not owned; it must outlive the sources. Thread-safety: each source
// is used by one thread at a time; the Host is thread-safe (remote_host.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/monitor/byte_source.h"
#include "app/remote/remote_host.h"

namespace fs::app {

// NOTE [Following over a stream]
// One stream per source, opened at the tail's position by the first call and kept
// open. stat() takes what has arrived (never waits once the stream said which file
// it holds) and reports the size and identity of the last S frame. read() serves
// the bytes received; bytes announced (below that size) but not yet arrived are
// waited for (read_timeout_ms), so a drain reads the whole file at the stream's
// pace. The buffer holds at most max_buffer bytes (the stream is read no further
// until the tail consumes) and drops what the tail has read, keeping keep_behind
// bytes behind its position. A read outside the buffer (the tail restarted after
// truncation, or skipped) reopens the stream at that offset; reopen() (the file was
// replaced) opens the next one at 0. A broken stream is kIOError once; the next
// call opens a new one at the tail's position.
struct StreamSourceOptions {
  // The engine's command; "stream", the options and the path are appended.
  std::vector<std::string> engine = {"flamingo-train"};
  int poll_ms = 20;                   // the engine's --poll-ms
  int open_timeout_ms = 20'000;       // for the stream's first frame
  int read_timeout_ms = 20'000;       // for bytes announced but not yet arrived
  std::size_t max_buffer = 8u << 20;  // received and not yet read by the tail
  std::size_t keep_behind = 4096;     // kept before the tail's position
};

class StreamFileSource : public ByteSource {
 public:
  // `path`: absolute on the host.
  StreamFileSource(remote::Host& host, std::string path, StreamSourceOptions options = {});
  ~StreamFileSource() override;

  std::string describe() const override;
  // kNotFound: no file (yet); kIOError "folder <host>:<dir> does not exist" when its
  // folder is missing too, the engine's error, or a broken stream.
  protocol::StatusOr<SourceStat> stat() override;
  protocol::StatusOr<std::size_t> read(std::uint64_t offset, char* buf, std::size_t n) override;
  protocol::StatusOr<SourceStat> statPath() override;
  void reopen() override;

  // Streams opened so far (tests, the bench).
  int streamsOpened() const { return opened_; }

 private:
  enum class State { kOpening, kMissingFile, kMissingFolder, kHeld };
  enum class PathState { kSame, kOther, kGone };

  protocol::Status ensureOpen(std::uint64_t offset);
  // Reads what the stream has (waiting up to timeout_ms for something) and parses it.
  protocol::Status pump(int timeout_ms);
  protocol::Status parse();
  protocol::Status broken(const std::string& why);
  void close();
  std::uint64_t windowEnd() const { return win_start_ + win_.size(); }

  remote::Host& host_;
  std::string path_;
  StreamSourceOptions options_;
  std::unique_ptr<remote::CommandStream> stream_;
  int opened_ = 0;
  std::uint64_t opened_at_ = 0;
  std::string in_;  // received, not parsed yet
  bool header_seen_ = false;
  std::uint64_t pending_data_ = 0;  // payload of the current D frame still to come
  State state_ = State::kOpening;
  FileIdentity identity_;
  std::uint64_t size_ = 0;
  PathState path_state_ = PathState::kSame;
  SourceStat other_;
  std::uint64_t win_start_ = 0;  // the window: the file's bytes [win_start_, windowEnd())
  std::string win_;
  std::uint64_t resume_at_ = 0;  // where the next stream starts: the tail's position
};

class StreamRunDir : public RunDirSource {
 public:
  StreamRunDir(remote::Host& host, std::string dir, StreamSourceOptions options = {});

  std::string describe() const override;
  std::unique_ptr<ByteSource> open(const std::string& relativePath) override;
  protocol::StatusOr<std::vector<std::string>> list(const std::string& relativeDir) override;

 private:
  remote::Host& host_;
  std::string dir_;
  StreamSourceOptions options_;
};

}  // namespace fs::app
