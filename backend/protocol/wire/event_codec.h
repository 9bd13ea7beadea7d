// The one encoder and the one decoder of events.jsonl (JSON Lines, docs/telemetry.md).
//
// Wire: every line is one JSON object followed by '\n':
//   {"v":"1.0","seq":12,"t":1718000000123,"type":"step", ...body fields...}
// The decoder is transport-agnostic: a follower (local file, SSH tail, SFTP reads) hands
// it whatever bytes arrived; it yields one DecodedLine per complete line and keeps a
// partial last line until its newline arrives. resumeOffset() is where a reconnecting
// follower starts reading again, so nothing is lost and nothing is decoded twice.
//
// Compatibility rules (NOTE [Schema versions] in docs/telemetry.md):
//  - unknown fields are ignored; an unknown `type` is reported as kSkipped, not an error;
//  - a line of the same major version with a newer minor decodes normally;
//  - a newer major version is an error for that line, with a message telling the user
//    to update; an older major version (0.x) is also rejected.
//
// Thread-safety: EventEncoder and EventDecoder are not thread-safe; use one per thread
// (the telemetry writer thread owns the encoder). Free functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/events.h"
#include "backend/protocol/wire/line_splitter.h"

namespace fs::protocol {

struct SchemaVersion {
  int major = 0;
  int minor = 0;
  bool operator==(const SchemaVersion&) const = default;
};
// "MAJOR.MINOR" with decimal numbers ("1.0", "1.12"); InvalidArgument otherwise.
StatusOr<SchemaVersion> parseSchemaVersion(std::string_view text);
// OK when a reader of `ours` may decode `theirs` (same major); otherwise a message
// "<what>: schema version 2.0 is newer than this reader (1.x); update Flamingo Studio".
Status checkSchemaVersion(SchemaVersion theirs, SchemaVersion ours, std::string_view what);

// The line for `event`: header first, then body fields, ending in '\n'. Strings that are
// not valid UTF-8 have the bad bytes replaced by U+FFFD.
std::string encodeEventLine(const Event& event);

// Assigns seq (gap-free from first_seq) and t to bodies and encodes them.
class EventEncoder {
 public:
  using Clock = std::function<std::int64_t()>;  // unix milliseconds
  explicit EventEncoder(std::uint64_t first_seq = 0, Clock clock = unixMillisNow);

  // The line for `body` with the next seq and t = clock() (or `t_ms`, for events queued
  // earlier than they are written).
  std::string encode(EventBody body);
  std::string encode(EventBody body, std::int64_t t_ms);
  // The same, returning the stamped Event instead of its line.
  Event stamp(EventBody body);
  std::uint64_t nextSeq() const { return next_seq_; }

 private:
  std::uint64_t next_seq_;
  Clock clock_;
};

// What one line of input turned into.
struct DecodedLine {
  enum class Kind {
    kEvent,    // `event` holds it
    kSkipped,  // well-formed line of a type this build does not know; `type` names it
    kError,    // `error` explains; decoding continues with the next line
  };
  Kind kind = Kind::kError;
  Event event;                       // kEvent only
  std::string type;                  // raw `type` when it could be read
  std::optional<std::uint64_t> seq;  // raw `seq` when it could be read (any kind)
  SchemaVersion version;             // raw `v` when it could be read
  Status error;                      // kError: "<source> line N: ..." (names offset too)
  bool too_long = false;             // kError for a line longer than max_line_bytes (skipped)
  std::uint64_t line = 0;            // 1-based line number in the source
  std::uint64_t offset = 0;          // byte offset of the line's first byte
  std::uint64_t end_offset = 0;      // byte offset just past its '\n'
};

struct EventDecoderOptions {
  std::string source_name = "events.jsonl";  // used in messages
  std::uint64_t start_offset = 0;            // absolute offset of the first byte fed
  std::uint64_t start_line = 1;              // line number of the first byte fed
  std::size_t max_line_bytes = 64u << 20;    // longer lines are reported and skipped
};

// Decodes one complete line (no trailing '\n'; a trailing '\r' is allowed). Returns
// nullopt for an empty or blank line. Never throws.
std::optional<DecodedLine> decodeEventLine(std::string_view line, std::uint64_t line_number,
                                           std::uint64_t offset,
                                           std::string_view source_name = "events.jsonl");

// Incremental decoder over a byte stream; see the file comment.
class EventDecoder {
 public:
  explicit EventDecoder(EventDecoderOptions options = {});

  // Consumes `bytes` and returns the records of every line completed by them, in order.
  // Never throws (allocation failure aside).
  std::vector<DecodedLine> feed(std::string_view bytes);

  // Offset just after the last complete line: resume reading there after a reconnect.
  std::uint64_t resumeOffset() const { return lines_.lineStart(); }
  // Line number the next complete line will get.
  std::uint64_t nextLine() const { return options_.start_line + lines_.linesEnded(); }
  // Bytes of a partial line held back (0 while skipping an over-long line).
  std::size_t bufferedBytes() const { return lines_.bufferedBytes(); }
  bool hasPartialLine() const { return lines_.position() > lines_.lineStart(); }

 private:
  EventDecoderOptions options_;
  LineSplitter lines_;  // NOTE [Bounded lines]: over-long lines come out truncated, reported here
};

// ---- sequence checks ---------------------------------------------------------------------

struct SeqGap {
  std::uint64_t first = 0;  // first missing seq
  std::uint64_t last = 0;   // last missing seq (inclusive)
  bool operator==(const SeqGap&) const = default;
};
struct SeqReport {
  std::vector<SeqGap> gaps;               // still missing, ascending
  std::vector<std::uint64_t> duplicates;  // seqs seen more than once, in arrival order
  std::vector<std::uint64_t> late;        // seqs that arrived after a higher one (filled a gap)
  bool ok() const { return gaps.empty() && duplicates.empty() && late.empty(); }
  // "missing 5..7, 12; duplicate 3; late 9" or "ok".
  std::string summary() const;
};

// Follows the seqs of a stream as they arrive. Memory is O(number of open gaps).
class SeqTracker {
 public:
  explicit SeqTracker(std::uint64_t expected_first = 0) : expected_(expected_first) {}
  void observe(std::uint64_t seq);
  const SeqReport& report() const { return report_; }
  // The seq a gap-free stream would carry next.
  std::uint64_t expected() const { return expected_; }

 private:
  std::uint64_t expected_;
  SeqReport report_;
};

// Gaps, duplicates and late arrivals in `seqs` (arrival order), expected from `first`.
SeqReport checkSeqs(std::span<const std::uint64_t> seqs, std::uint64_t first = 0);

}  // namespace fs::protocol
