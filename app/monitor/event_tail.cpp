#include "app/monitor/event_tail.h"

#include <QString>
#include <cstring>
#include <variant>

#include "app/monitor/local_file_source.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::app {
namespace {

// Past this many line-level problems in one chunk, the rest are counted, not listed:
// a file of garbage must not flood the GUI thread with a signal per line.
constexpr int kMaxIssuesPerChunk = 50;

using protocol::Status;

}  // namespace

// Bytes with FastEventDecoder::padding() readable after the end, as simdjson needs.
struct EventTail::Buffer {
  std::unique_ptr<char[]> data;
  std::size_t size = 0;
  std::size_t capacity = 0;  // usable bytes, padding not included

  void reserve(std::size_t n) {
    if (n <= capacity) return;
    const std::size_t cap = std::max(n, capacity * 2);
    auto fresh = std::make_unique<char[]>(cap + FastEventDecoder::padding());
    if (size > 0) std::memcpy(fresh.get(), data.get(), size);
    data = std::move(fresh);
    capacity = cap;
  }
};

EventTail::EventTail(std::filesystem::path eventsFile, const FollowPosition& start, std::size_t maxReadBytes,
                     std::size_t maxLineBytes, const std::atomic<bool>* cancel)
    : EventTail(std::make_unique<LocalFileSource>(std::move(eventsFile)), start, maxReadBytes, maxLineBytes,
                cancel) {}

EventTail::EventTail(std::unique_ptr<ByteSource> source, const FollowPosition& start,
                     std::size_t maxReadBytes, std::size_t maxLineBytes, const std::atomic<bool>* cancel)
    : watch_(std::move(source), start),
      max_read_bytes_(maxReadBytes),
      max_line_bytes_(maxLineBytes),
      cancel_(cancel),
      buf_(std::make_unique<Buffer>()),
      line_start_(start.offset),
      next_line_(start.next_line),
      seq_(watch_.name(), start.last_seq),
      backlog_(BacklogDecoder::defaultHelpers()),
      batch_start_offset_(start.offset) {}

EventTail::~EventTail() = default;

FollowPosition EventTail::position() const {
  FollowPosition p;
  p.offset = skipping_ ? skip_start_ : line_start_;
  p.next_line = next_line_;
  p.last_seq = seq_.last();
  p.inode = watch_.inode();
  p.head = watch_.head();
  return p;
}

void EventTail::report(std::vector<FollowIssue>* issues, FollowIssue issue) {
  const bool per_line =
      issue.kind == FollowIssue::Kind::kUndecodable || issue.kind == FollowIssue::Kind::kDuplicate;
  if (per_line && ++reported_this_chunk_ > kMaxIssuesPerChunk) {
    ++suppressed_this_chunk_;
    return;
  }
  issues->push_back(std::move(issue));
}

void EventTail::restartFromBeginning() {
  batch_start_offset_ = 0;
  line_start_ = 0;
  next_line_ = 1;
  buf_->size = 0;
  skipping_ = false;
  seq_.restart();
}

bool EventTail::poll(std::vector<FollowIssue>* issues) {
  reported_this_chunk_ = 0;
  suppressed_this_chunk_ = 0;
  bool replaced = false;
  const std::optional<SourceStat> stat = watch_.stat(seq_.skippingSeqs(), issues, &replaced);
  if (replaced) restartFromBeginning();
  if (!stat) return false;
  const std::uint64_t size = stat->size;
  file_size_ = size;
  // NOTE [Restarted writer]: a partial line held from the last poll must still be there.
  if (!skipping_ && buf_->size > 0 && !heldLineStillThere(size)) buf_->size = 0;
  std::uint64_t read_pos = line_start_ + buf_->size;
  // A file truncated and rewritten past our position between two polls does not
  // shrink; the byte before a line start that is no longer '\n' gives it away.
  bool rewritten = false;
  if (size > read_pos && buf_->size == 0 && line_start_ > 0 && !skipping_) {
    char before = '\n';
    auto n = watch_.source().read(line_start_ - 1, &before, 1);
    rewritten = n && *n == 1 && before != '\n';
  }
  if (size < read_pos || rewritten) {
    const QString what = rewritten
                             ? QStringLiteral("%1 was rewritten: byte offset %2 no longer starts a line")
                                   .arg(watch_.name())
                                   .arg(read_pos)
                             : QStringLiteral("%1 shrank to %2 bytes, below the read position %3")
                                   .arg(watch_.name())
                                   .arg(size)
                                   .arg(read_pos);
    issues->push_back(
        {FollowIssue::Kind::kTruncated,
         what + QStringLiteral(": it was truncated; reading it again from the start") + seq_.skippingSeqs(),
         next_line_, read_pos});
    restartFromBeginning();
    watch_.forgetHead();
  }
  // Without an identity, another file at the path shows in its first bytes.
  if (!stat->identity) {
    const FileWatch::Head head =
        watch_.checkHead(size, seq_.skippingSeqs(), next_line_, line_start_ + buf_->size, issues);
    if (head == FileWatch::Head::kUnreadable) return false;
    if (head == FileWatch::Head::kReplaced) restartFromBeginning();
  }
  read_pos = line_start_ + buf_->size;

  if (size > read_pos) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(size - read_pos, max_read_bytes_));
    buf_->reserve(buf_->size + want);
    std::size_t got = 0;
    while (got < want) {
      auto n = watch_.source().read(read_pos + got, buf_->data.get() + buf_->size + got, want - got);
      if (!n) {
        // Gone since stat(): the next poll says so. Anything else: said once, and the
        // next poll reads on from here.
        if (n.status().code() != Status::Code::kNotFound)
          watch_.readError(issues, QString::fromStdString(n.status().message()));
        break;
      }
      if (*n == 0) break;
      got += *n;
    }
    buf_->size += got;
    if (got == want) watch_.readWorked();
    processLines(issues);
    if (suppressed_this_chunk_ > 0) {
      issues->push_back(
          {FollowIssue::Kind::kUndecodable,
           QStringLiteral("%1: %2 more undecodable or duplicate lines in this read were skipped")
               .arg(watch_.name())
               .arg(suppressed_this_chunk_)});
    }
    const bool cancelled = cancel_ != nullptr && cancel_->load(std::memory_order_relaxed);
    if (cancelled) return false;
    if (got == want && read_pos + got < size) return true;
    if (got < want) return false;  // a failed or short read: try again at the next poll
  }

  // Everything in the file is read: has another file taken its name? (Only a source
  // that holds its file open can be reading another file than the path names.)
  if (!stat->identity || !watch_.checkPath(seq_.skippingSeqs(), issues)) return false;
  restartFromBeginning();
  return true;
}

bool EventTail::heldLineStillThere(std::uint64_t size) {
  if (size < line_start_ + buf_->size) return false;
  std::string now(buf_->size, '\0');
  std::size_t got = 0;
  while (got < now.size()) {
    auto n = watch_.source().read(line_start_ + got, now.data() + got, now.size() - got);
    if (!n || *n == 0) return false;
    got += *n;
  }
  return std::memcmp(now.data(), buf_->data.get(), now.size()) == 0;
}

void EventTail::drain(std::vector<FollowIssue>* issues) {
  while (poll(issues)) {
  }
}

std::size_t EventTail::processInParallel(std::vector<FollowIssue>* issues) {
  // In file order: seqs, the slow path, the series.
  const StepRecord* last_step = nullptr;
  std::size_t since_check = 0;
  const std::size_t pos =
      backlog_.decode(buf_->data.get(), buf_->size, max_line_bytes_, [&](const BacklogDecoder::Line& line) {
        if (cancel_ != nullptr && ++since_check == 1024) {
          since_check = 0;
          if (cancel_->load(std::memory_order_relaxed)) return false;
        }
        const std::uint64_t offset = line_start_ + line.begin;
        if (reportIfTooLong(line.text.size(), offset, next_line_, issues)) {
        } else if (line.step != nullptr) {
          if (deliverStep(*line.step, offset, next_line_, issues)) last_step = line.step;
        } else if (line.memory != nullptr) {
          deliverOther(std::move(*line.memory), offset, next_line_, issues);
        } else {
          handleSlowLine(line.text, offset, next_line_, issues);
        }
        ++next_line_;
        return true;
      });
  // deliverStep() marked the last step as held by the caller (-2) unless a slow-path
  // step came after it; keep a copy, the decoder reuses its records for the next chunk.
  if (last_step != nullptr && last_fast_step_ == -2) {
    records_[decode_into_] = *last_step;
    last_fast_step_ = decode_into_;
    decode_into_ ^= 1;
  }
  return pos;
}

void EventTail::processLines(std::vector<FollowIssue>* issues) {
  char* const data = buf_->data.get();
  const std::size_t size = buf_->size;
  std::size_t pos = 0;
  if (backlog_.available() && !skipping_ && size >= kParallelMinBytes) pos = processInParallel(issues);
  std::size_t since_check = 0;
  const bool cancelled = cancel_ != nullptr && cancel_->load(std::memory_order_relaxed);
  while (pos < size && !cancelled) {
    if (cancel_ != nullptr && ++since_check == 1024) {
      since_check = 0;
      if (cancel_->load(std::memory_order_relaxed)) break;
    }
    const void* nl = std::memchr(data + pos, '\n', size - pos);
    if (nl == nullptr) {
      if (!skipping_ && reportIfTooLong(size - pos, line_start_ + pos, next_line_, issues)) {
        skipping_ = true;
        skip_start_ = line_start_ + pos;
      }
      if (skipping_) pos = size;  // drop what there is of it; the rest goes at its newline
      break;
    }
    const std::size_t end = static_cast<std::size_t>(static_cast<const char*>(nl) - data);
    if (skipping_) {
      skipping_ = false;
    } else {
      handleLine(std::string_view(data + pos, end - pos), line_start_ + pos, next_line_, issues);
    }
    ++next_line_;
    pos = end + 1;
  }
  std::memmove(data, data + pos, size - pos);
  buf_->size = size - pos;
  line_start_ += pos;
}

bool EventTail::accept(std::uint64_t seq, std::uint64_t offset, std::uint64_t lineNo,
                       std::vector<FollowIssue>* issues) {
  SeqCheck::Verdict v = seq_.accept(seq, offset, lineNo);
  if (v.issue) {
    // Duplicates count against the per-chunk limit; a gap is always said.
    if (v.issue->kind == FollowIssue::Kind::kDuplicate) {
      report(issues, std::move(*v.issue));
    } else {
      issues->push_back(std::move(*v.issue));
    }
  }
  return v.deliver;
}

bool EventTail::reportIfTooLong(std::size_t length, std::uint64_t offset, std::uint64_t lineNo,
                                std::vector<FollowIssue>* issues) {
  if (length <= max_line_bytes_) return false;
  report(issues, {FollowIssue::Kind::kUndecodable,
                  QStringLiteral("%1 line %2 (byte offset %3): line longer than %4 bytes; skipped")
                      .arg(watch_.name())
                      .arg(lineNo)
                      .arg(offset)
                      .arg(max_line_bytes_),
                  lineNo, offset});
  return true;
}

bool EventTail::deliverStep(const StepRecord& rec, std::uint64_t offset, std::uint64_t lineNo,
                            std::vector<FollowIssue>* issues) {
  if (!accept(rec.seq, offset, lineNo, issues)) return false;
  builder_.addStep(rec);
  seqs_.push_back(rec.seq);
  last_fast_step_ = -2;  // the caller knows where the record is and keeps it
  last_slow_step_.reset();
  return true;
}

void EventTail::deliverOther(protocol::Event&& e, std::uint64_t offset, std::uint64_t lineNo,
                             std::vector<FollowIssue>* issues) {
  if (!accept(e.seq, offset, lineNo, issues)) return;
  builder_.addEvent(e);
  seqs_.push_back(e.seq);
  events_.push_back(std::move(e));
}

void EventTail::handleLine(std::string_view line, std::uint64_t offset, std::uint64_t lineNo,
                           std::vector<FollowIssue>* issues) {
  if (reportIfTooLong(line.size(), offset, lineNo, issues)) return;
  StepRecord& rec = records_[decode_into_];
  protocol::Event memory;
  switch (fast_.decodePadded(line, &rec, &memory)) {
    case FastEventDecoder::Result::kStep:
      if (deliverStep(rec, offset, lineNo, issues)) {
        last_fast_step_ = decode_into_;  // keep this one; decode the next line into the other
        decode_into_ ^= 1;
      }
      return;
    case FastEventDecoder::Result::kMemory:
      deliverOther(std::move(memory), offset, lineNo, issues);
      return;
    case FastEventDecoder::Result::kNotHandled:
      handleSlowLine(line, offset, lineNo, issues);
      return;
  }
}

void EventTail::handleSlowLine(std::string_view line, std::uint64_t offset, std::uint64_t lineNo,
                               std::vector<FollowIssue>* issues) {
  auto decoded = protocol::decodeEventLine(line, lineNo, offset, protocol::kEventsFileName);
  if (!decoded) return;  // blank line
  switch (decoded->kind) {
    case protocol::DecodedLine::Kind::kEvent:
      if (std::holds_alternative<protocol::StepEvent>(decoded->event.body)) {
        protocol::Event& e = decoded->event;
        if (!accept(e.seq, offset, lineNo, issues)) return;
        builder_.addEvent(e);
        seqs_.push_back(e.seq);
        last_slow_step_ = std::move(e);
        last_fast_step_ = -1;
      } else {
        deliverOther(std::move(decoded->event), offset, lineNo, issues);
      }
      return;
    case protocol::DecodedLine::Kind::kSkipped:
      if (decoded->seq) accept(*decoded->seq, offset, lineNo, issues);  // a newer type: its seq still counts
      return;
    case protocol::DecodedLine::Kind::kError:
      report(issues, {FollowIssue::Kind::kUndecodable,
                      QString::fromStdString(decoded->error.message()) + QStringLiteral("; skipped"), lineNo,
                      offset});
      if (decoded->seq) seq_.skipUndecodable(*decoded->seq);
      return;
  }
}

FollowBatch EventTail::takeBatch() {
  FollowBatch b;
  b.series = builder_.take();
  b.events = std::move(events_);
  events_.clear();
  b.seqs = std::move(seqs_);
  seqs_.clear();
  if (last_fast_step_ >= 0) {
    b.last_step = toStepEvent(records_[last_fast_step_]);
  } else if (last_slow_step_) {
    b.last_step = std::move(*last_slow_step_);
  }
  last_fast_step_ = -1;
  last_slow_step_.reset();
  b.position = position();
  // A backlog: as many rows per byte in the rest of the file as in this batch.
  const std::uint64_t consumed =
      b.position.offset > batch_start_offset_ ? b.position.offset - batch_start_offset_ : 0;
  if (consumed > 0 && file_size_ > b.position.offset) {
    b.series.rows_hint =
        static_cast<std::size_t>(static_cast<double>(b.series.rows.size()) / static_cast<double>(consumed) *
                                 static_cast<double>(file_size_ - b.position.offset));
  }
  batch_start_offset_ = b.position.offset;
  return b;
}

}  // namespace fs::app
