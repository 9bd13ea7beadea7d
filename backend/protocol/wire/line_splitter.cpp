#include "backend/protocol/wire/line_splitter.h"

#include <algorithm>

namespace fs::protocol {

namespace {

// A buffer that held a long line gives its memory back above this.
constexpr std::size_t kSplitterKeepCapacity = 64u << 10;

}  // namespace

LineSplitter::LineSplitter(std::size_t maxLineBytes, std::uint64_t startOffset)
    : max_(std::max<std::size_t>(1, maxLineBytes)), line_start_(startOffset), position_(startOffset) {}

void LineSplitter::feed(std::string_view bytes, const OnLine& onLine) {
  while (!bytes.empty()) {
    const std::size_t nl = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, nl);  // the whole rest when no newline
    if (!skipping_) {
      if (partial_.size() + piece.size() > max_) {
        // Past the limit: hand out what fits as a truncated line, drop the rest of it.
        std::string_view head = piece.substr(0, max_ - partial_.size());
        if (!partial_.empty()) {
          partial_.append(head);
          head = partial_;
        }
        ++truncated_;
        onLine({head, true, line_start_, lines_ended_});
        partial_.clear();
        if (partial_.capacity() > kSplitterKeepCapacity) partial_.shrink_to_fit();
        skipping_ = true;
      } else if (nl != std::string_view::npos) {
        std::string_view text = piece;
        if (!partial_.empty()) {
          partial_.append(piece);
          text = partial_;
        }
        onLine({text, false, line_start_, lines_ended_});
        partial_.clear();
        if (partial_.capacity() > kSplitterKeepCapacity) partial_.shrink_to_fit();
      } else {
        partial_.append(piece);
      }
    }
    position_ += piece.size();
    if (nl == std::string_view::npos) break;
    position_ += 1;
    line_start_ = position_;
    ++lines_ended_;
    skipping_ = false;
    bytes.remove_prefix(nl + 1);
  }
}

void LineSplitter::flush(const OnLine& onLine) {
  if (skipping_ || !partial_.empty()) {
    if (!skipping_) onLine({partial_, false, line_start_, lines_ended_});
    ++lines_ended_;  // ended by the end of the stream
  }
  reset(position_);
}

void LineSplitter::reset(std::uint64_t offset) {
  partial_.clear();
  if (partial_.capacity() > kSplitterKeepCapacity) partial_.shrink_to_fit();
  skipping_ = false;
  line_start_ = offset;
  position_ = offset;
}

std::string truncatedLineMark(std::size_t maxLineBytes) {
  return " [truncated: line longer than " + std::to_string(maxLineBytes) + " bytes]";
}

}  // namespace fs::protocol
