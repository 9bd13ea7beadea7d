// EventTail: reads what was appended to one events.jsonl and decodes it, keeping the
// guarantees of NOTE [Follow guarantees] (run_follower.cpp): partial lines wait,
// truncation and replacement are detected and recovered from, seqs are checked.
// The bytes come from a ByteSource it owns: a local file or one on a remote::Host
// (NOTE [Sources and decoders] in byte_source.h).
//
// Its parts, each owned here: the file's identity across polls is a FileWatch
// (file_watch.h, which owns the source), the seq bookkeeping a SeqCheck
// (seq_check.h), the parallel decoding of a backlog a BacklogDecoder
// (backlog_decoder.h). EventTail keeps the read position, truncation, the lines
// and the batch.
//
// RunFollower drives it from its poll timer; it has no Qt event loop of its own, so a
// test can drive it directly, one poll() at a time.
//
// NOTE [Parallel backlog]
// Opening a finished run means decoding up to millions of lines at once; parsing is
// most of that work. A chunk of at least kParallelMinBytes is cut at line boundaries
// into pieces that helper threads (BacklogDecoder's private QThreadPool) decode with
// their own fast decoders, while the seq checks, the slow-path decoding and the series building stay
// on the calling thread, in file order; each piece is delivered as soon as it is
// decoded, overlapping with the decoding of the pieces after it. A live run's few new lines per poll take the
// plain one-thread path.
//
// NOTE [Restarted writer]
// A rank 0 killed mid-append leaves a partial last line; the engine that resumes on the
// run directory (a node agent's restart, launch.max_restarts) cuts it and appends its
// own lines from there, continuing the seqs (backend/telemetry/event_sink.h). The file
// may never shrink below what we read, so neither the size nor the byte before our
// line start can tell. So a partial line kept across polls is compared with the file's
// bytes at its place before more is appended to it (at most one line, re-read while a
// writer is mid-line); when they differ it is dropped and read again as it now is: a
// replaced tail is neither lost nor doubled (tests/app/monitor/event_tail_restart_test.cpp).
//
// Thread-safety: not thread-safe; one thread at a time (it uses its helpers itself).
// Does I/O through its source.
#pragma once

#include <QString>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/monitor/backlog_decoder.h"
#include "app/monitor/byte_source.h"
#include "app/monitor/fast_event_decoder.h"
#include "app/monitor/file_watch.h"
#include "app/monitor/follow_types.h"
#include "app/monitor/seq_check.h"
#include "app/monitor/series_batch.h"

namespace fs::app {

class EventTail {
 public:
  // `cancel` (may be null) is polled while decoding a chunk. REQUIRES: source.
  EventTail(std::unique_ptr<ByteSource> source, const FollowPosition& start, std::size_t maxReadBytes,
            std::size_t maxLineBytes, const std::atomic<bool>* cancel);
  // A local file (LocalFileSource).
  EventTail(std::filesystem::path eventsFile, const FollowPosition& start, std::size_t maxReadBytes,
            std::size_t maxLineBytes, const std::atomic<bool>* cancel);
  ~EventTail();
  EventTail(const EventTail&) = delete;
  EventTail& operator=(const EventTail&) = delete;

  // Reads and decodes at most max_read_bytes; appends problems to *issues. Returns true
  // when more is waiting (the caller should poll again soon rather than wait).
  bool poll(std::vector<FollowIssue>* issues);
  static constexpr std::size_t kParallelMinBytes = 1u << 20;
  // How much of the file's start identifies it where the source knows no identity.
  static constexpr std::size_t kHeadBytes = FileWatch::kHeadBytes;
  // Reads and decodes until the end of the file (or cancellation).
  void drain(std::vector<FollowIssue>* issues);

  // Whether anything was decoded since the last takeBatch().
  bool hasPending() const { return !seqs_.empty(); }
  // Everything decoded since the last call, with the position after it (log offsets
  // are the caller's to fill).
  FollowBatch takeBatch();
  FollowPosition position() const;

 private:
  struct Buffer;
  // The lines start again at the file's first byte (the caller tells the FileWatch).
  void restartFromBeginning();
  // Whether the file still holds the partial line in buf_ at line_start_ (NOTE [Restarted writer]).
  bool heldLineStillThere(std::uint64_t size);
  void processLines(std::vector<FollowIssue>* issues);
  // Decodes the complete lines of the buffer with backlog_'s helpers; returns the
  // buffer position after the last line handled (0 when it did nothing).
  std::size_t processInParallel(std::vector<FollowIssue>* issues);
  void handleLine(std::string_view line, std::uint64_t offset, std::uint64_t lineNo,
                  std::vector<FollowIssue>* issues);
  // A line the fast path decoded; false when it was not delivered (seq already seen).
  bool deliverStep(const StepRecord& rec, std::uint64_t offset, std::uint64_t lineNo,
                   std::vector<FollowIssue>* issues);
  // A decoded event of any type but step.
  void deliverOther(protocol::Event&& e, std::uint64_t offset, std::uint64_t lineNo,
                    std::vector<FollowIssue>* issues);
  // Any other line, through the protocol decoder.
  void handleSlowLine(std::string_view line, std::uint64_t offset, std::uint64_t lineNo,
                      std::vector<FollowIssue>* issues);
  bool reportIfTooLong(std::size_t length, std::uint64_t offset, std::uint64_t lineNo,
                       std::vector<FollowIssue>* issues);
  // Seq bookkeeping for a line that carries `seq`; true when it is to be delivered.
  bool accept(std::uint64_t seq, std::uint64_t offset, std::uint64_t lineNo,
              std::vector<FollowIssue>* issues);
  void report(std::vector<FollowIssue>* issues, FollowIssue issue);

  FileWatch watch_;  // the source, and the file's identity across polls
  std::size_t max_read_bytes_;
  std::size_t max_line_bytes_;
  const std::atomic<bool>* cancel_;

  std::unique_ptr<Buffer> buf_;  // bytes from line_start_ on, no complete line once processed
  std::uint64_t line_start_;     // file offset of buf_'s first byte
  std::uint64_t next_line_;
  bool skipping_ = false;         // inside an over-long line, dropping bytes up to its newline
  std::uint64_t skip_start_ = 0;  // where that line started
  SeqCheck seq_;                  // drops seqs already delivered, quietly after truncation / replacement
  int reported_this_chunk_ = 0;
  int suppressed_this_chunk_ = 0;

  FastEventDecoder fast_;
  StepRecord records_[2];  // decode into one while the other may hold the last step delivered
  int decode_into_ = 0;
  int last_fast_step_ = -1;  // index into records_ of the last step delivered by the fast path
  std::optional<protocol::Event> last_slow_step_;
  BacklogDecoder backlog_;  // NOTE [Parallel backlog]; not available() on one core
  SeriesBatchBuilder builder_;
  std::vector<protocol::Event> events_;
  std::vector<std::uint64_t> seqs_;
  std::uint64_t file_size_ = 0;           // at the last poll
  std::uint64_t batch_start_offset_ = 0;  // position().offset at the last takeBatch()
};

}  // namespace fs::app
