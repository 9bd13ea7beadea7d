// LineSplitter: cuts a byte stream that arrives in chunks into '\n'-ended lines,
// holding at most maxLineBytes of an unfinished line. The one bounded splitter
// of every reader of text lines from a peer or a file: events.jsonl
// (EventDecoder, `remote follow`, the `remote stop` ack wait), rank logs, a
// process's output. NOTE [Bounded lines].
//
//   LineSplitter lines(kMaxLineBytes);
//   lines.feed(chunk, [&](const LineSplitter::Line& l) { ... l.text, l.truncated ... });
//
// NOTE [Bounded lines]
// A peer (or a corrupt file) that never writes '\n' must not make a reader buffer
// without limit, nor lose sync silently. A line longer than maxLineBytes is handed
// out once, as soon as it passes the limit, as its first maxLineBytes bytes with
// `truncated` set; the rest of it, up to its '\n', is dropped as it arrives (never
// buffered), and the next line is read intact. The reader decides what a truncated
// line is: a log line shown with a mark, an event line reported and skipped.
//
// Ownership: a Line's text views the chunk given to feed() or the splitter's own
// buffer; valid during the callback only.
// Thread-safety: not thread-safe; one per stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace fs::protocol {

class LineSplitter {
 public:
  struct Line {
    std::string_view text;     // without its '\n' (a '\r' before it is kept)
    bool truncated = false;    // longer than the limit: `text` is its first maxLineBytes bytes
    std::uint64_t offset = 0;  // stream offset of its first byte
    std::uint64_t number = 0;  // 0-based: how many lines ended before it
  };
  using OnLine = std::function<void(const Line&)>;

  // REQUIRES: maxLineBytes > 0. `startOffset`: the stream offset of the first byte fed.
  explicit LineSplitter(std::size_t maxLineBytes, std::uint64_t startOffset = 0);

  // Consumes `bytes`; calls `onLine` for every line they complete, and once for a
  // line as soon as it passes the limit (truncated).
  void feed(std::string_view bytes, const OnLine& onLine);
  // At the end of the stream: the unfinished line, if any and not already handed
  // out truncated, as a line; then starts over at the current position.
  void flush(const OnLine& onLine);
  // Forgets any unfinished line and continues as a fresh stream at `offset`.
  void reset(std::uint64_t offset);

  std::size_t maxLineBytes() const { return max_; }
  // Bytes of an unfinished line held (never more than maxLineBytes()).
  std::size_t bufferedBytes() const { return partial_.size(); }
  // Offset just after the last '\n' consumed: where the unfinished line starts.
  std::uint64_t lineStart() const { return line_start_; }
  // Offset just after the last byte fed.
  std::uint64_t position() const { return position_; }
  // Lines ended so far (by '\n'), truncated ones included.
  std::uint64_t linesEnded() const { return lines_ended_; }
  // Lines handed out truncated so far.
  std::uint64_t truncatedLines() const { return truncated_; }
  // Inside a line already handed out truncated, dropping it up to its '\n'.
  bool skipping() const { return skipping_; }

 private:
  std::size_t max_;
  std::string partial_;  // the unfinished line's bytes, at most max_
  bool skipping_ = false;
  std::uint64_t line_start_;
  std::uint64_t position_;
  std::uint64_t lines_ended_ = 0;
  std::uint64_t truncated_ = 0;
};

// " [truncated: line longer than N bytes]": the mark a text reader appends to a
// truncated line it shows.
std::string truncatedLineMark(std::size_t maxLineBytes);

}  // namespace fs::protocol
