// BacklogDecoder: decodes a large chunk of events.jsonl lines with helper
// threads and hands the lines back in file order (NOTE [Parallel backlog] in
// event_tail.h). It owns the helpers (a private QThreadPool) and the pieces a
// chunk is cut into; the caller keeps the seq checks, the slow-path decoding and
// the series, on its own thread.
//
// Owned by EventTail. Thread-safety: one calling thread at a time; the helpers
// only decode, into pieces this object owns.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "app/monitor/step_record.h"
#include "backend/protocol/wire/events.h"

class QThreadPool;

namespace fs::app {

class BacklogDecoder {
 public:
  // `helpers`: helper threads; 0 or less makes one that is not available().
  explicit BacklogDecoder(int helpers);
  ~BacklogDecoder();
  BacklogDecoder(const BacklogDecoder&) = delete;
  BacklogDecoder& operator=(const BacklogDecoder&) = delete;

  // Helpers = min(ideal thread count, 8) - 1.
  static int defaultHelpers();
  bool available() const { return pool_ != nullptr; }

  // One complete line of the chunk, as the fast decoder left it.
  struct Line {
    std::string_view text;              // without '\n'
    std::size_t begin = 0;              // its first byte's index in the chunk
    const StepRecord* step = nullptr;   // the fast path took it as a step (valid until the next decode)
    protocol::Event* memory = nullptr;  // the fast path took it as a memory event (may be moved from)
  };
  // A line longer than maxLineBytes is handed back undecoded (no step, no memory).
  // Decodes the complete lines of data[0, size) and calls `deliver` for each, in
  // file order, on this thread, while the helpers decode the lines after it.
  // Stops before a line when `deliver` returns false. Returns the index just
  // after the last line delivered (0 when none).
  // REQUIRES: available(); FastEventDecoder::padding() bytes readable after data + size.
  std::size_t decode(const char* data, std::size_t size, std::size_t maxLineBytes,
                     const std::function<bool(const Line&)>& deliver);

 private:
  struct Piece;
  std::unique_ptr<QThreadPool> pool_;
  std::vector<std::unique_ptr<Piece>> pieces_;  // kept between chunks for their capacity
};

}  // namespace fs::app
