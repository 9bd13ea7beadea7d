// FollowLines: what `remote follow` makes of the bytes of events.jsonl it reads:
// the progress line (step, losses, state), or with --jsonl every event line copied
// as the engine wrote it; seq gaps and skipped lines said on `err`; the exit code
// once run_finished arrives.
//
// Lines are cut by protocol::LineSplitter: an unfinished line holds at most
// maxLineBytes, and a longer one is reported and skipped (not copied: it is no whole
// event), the next line read intact (NOTE [Bounded lines] in
// backend/protocol/wire/line_splitter.h).
//
// Ownership: writes to the streams it is given, which must outlive it.
// Threads: the command's thread only.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/line_splitter.h"

namespace fs::studio::remote {

// The longest event line followed: the events' own limit (the monitor's follower's).
inline constexpr std::size_t kFollowMaxLineBytes = protocol::EventDecoderOptions{}.max_line_bytes;

class FollowLines {
 public:
  struct Options {
    std::string source;  // "host:path", for messages
    bool jsonl = false;  // copy the lines instead of a progress line
    bool tty = false;    // redraw the progress line in place
    std::size_t maxLineBytes = kFollowMaxLineBytes;
  };
  FollowLines(Options options, std::ostream& out, std::ostream& err);

  // Consumes the next bytes of the file; prints what their complete lines say.
  void feed(std::string_view bytes);
  // Whether an unfinished line waits for its newline.
  bool hasPartialLine() const { return lines_.position() > lines_.lineStart(); }
  // Set once a run_finished event arrived: kExitOk, or kExitFailure when it failed.
  std::optional<int> exitCode() const { return exit_code_; }
  // Bytes of the unfinished line held (at most maxLineBytes).
  std::size_t bufferedBytes() const { return lines_.bufferedBytes(); }
  // Lines skipped as longer than maxLineBytes.
  std::uint64_t skippedLines() const { return lines_.truncatedLines(); }

 private:
  struct Progress {
    std::int64_t step = 0, total = 0;
    std::string losses, state = "starting";
    std::string line() const;
  };
  void handle(const protocol::LineSplitter::Line& line);

  Options options_;
  std::ostream& out_;
  std::ostream& err_;
  protocol::LineSplitter lines_;
  std::optional<std::uint64_t> last_seq_;
  Progress progress_;
  std::optional<int> exit_code_;
};

}  // namespace fs::studio::remote
