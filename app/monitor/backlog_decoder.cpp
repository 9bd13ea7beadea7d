#include "app/monitor/backlog_decoder.h"

#include <QThread>
#include <QThreadPool>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <latch>

#include "app/monitor/fast_event_decoder.h"

namespace fs::app {
namespace {

// A chunk is cut into pieces of at least this many bytes.
constexpr std::size_t kMinPieceBytes = 64 * 1024;

}  // namespace

// One slice of a chunk, decoded by one helper.
struct BacklogDecoder::Piece {
  struct Line {
    std::size_t begin = 0;   // in the chunk
    std::size_t length = 0;  // without '\n'
    int record = -1;         // index into records when the fast path took it as a step
    int memory = -1;         // index into memories when it took it as a memory event
  };
  std::size_t begin = 0;
  std::size_t end = 0;  // just after a '\n'
  std::vector<Line> lines;
  std::vector<StepRecord> records;  // kept between chunks for their capacity
  std::vector<protocol::Event> memories;
  FastEventDecoder decoder;
  std::atomic<bool> done{false};  // decoded: its lines may be delivered

  void decode(const char* data, std::size_t maxLineBytes) {
    lines.clear();
    memories.clear();
    std::size_t used = 0;
    protocol::Event memory;
    for (std::size_t pos = begin; pos < end;) {
      const auto* nl = static_cast<const char*>(std::memchr(data + pos, '\n', end - pos));
      Line line{pos, static_cast<std::size_t>(nl - data) - pos, -1, -1};
      if (line.length <= maxLineBytes) {
        if (used == records.size()) records.emplace_back();
        switch (decoder.decodePadded({data + pos, line.length}, &records[used], &memory)) {
          case FastEventDecoder::Result::kStep:
            line.record = static_cast<int>(used++);
            break;
          case FastEventDecoder::Result::kMemory:
            line.memory = static_cast<int>(memories.size());
            memories.push_back(std::move(memory));
            break;
          case FastEventDecoder::Result::kNotHandled:
            break;
        }
      }
      lines.push_back(line);
      pos += line.length + 1;
    }
  }
};

BacklogDecoder::BacklogDecoder(int helpers) {
  if (helpers > 0) {
    pool_ = std::make_unique<QThreadPool>();
    pool_->setMaxThreadCount(helpers);
    pool_->setObjectName(QStringLiteral("event-decode"));
  }
}

BacklogDecoder::~BacklogDecoder() = default;

int BacklogDecoder::defaultHelpers() {
  return std::min(QThread::idealThreadCount(), 8) - 1;
}

std::size_t BacklogDecoder::decode(const char* data, std::size_t size, std::size_t maxLineBytes,
                                   const std::function<bool(const Line&)>& deliver) {
  const void* last = memrchr(data, '\n', size);
  if (last == nullptr) return 0;
  const std::size_t end = static_cast<std::size_t>(static_cast<const char*>(last) - data) + 1;

  // Pieces of about equal size, each ending just after a '\n'; more pieces than threads,
  // taken in turn by whichever thread is free, so a busy core does not hold the rest up.
  const auto threads = static_cast<std::size_t>(pool_->maxThreadCount()) + 1;
  const std::size_t count = std::min<std::size_t>(8 * threads, end / kMinPieceBytes + 1);
  while (pieces_.size() < count) pieces_.push_back(std::make_unique<Piece>());
  std::size_t begin = 0;
  std::size_t used = 0;
  for (; used < count && begin < end; ++used) {
    Piece& piece = *pieces_[used];
    std::size_t cut = used + 1 == count ? end : std::max(begin, end * (used + 1) / count);
    if (cut < end) {
      const auto* nl = static_cast<const char*>(std::memchr(data + cut, '\n', end - cut));
      cut = static_cast<std::size_t>(nl - data) + 1;
    }
    piece.begin = begin;
    piece.end = cut;
    begin = cut;
  }
  for (std::size_t i = 0; i < used; ++i) pieces_[i]->done.store(false, std::memory_order_relaxed);
  std::atomic<std::size_t> next{0};
  auto decodeOne = [&](std::size_t i) {
    pieces_[i]->decode(data, maxLineBytes);
    pieces_[i]->done.store(true, std::memory_order_release);
    pieces_[i]->done.notify_all();
  };
  const std::size_t helpers = std::min(threads - 1, used - 1);
  std::latch helpers_done(static_cast<std::ptrdiff_t>(helpers));
  for (std::size_t h = 0; h < helpers; ++h) {
    pool_->start([&] {
      for (std::size_t i = next++; i < used; i = next++) decodeOne(i);
      helpers_done.count_down();
    });
  }

  // In file order. A piece is delivered as soon as it is decoded, so delivering
  // overlaps with the helpers decoding the pieces after it; this thread decodes
  // whatever nobody has taken yet.
  std::size_t pos = 0;
  bool stopped = false;
  for (std::size_t i = 0; i < used && !stopped; ++i) {
    Piece& piece = *pieces_[i];
    while (!piece.done.load(std::memory_order_acquire)) {
      if (const std::size_t j = next++; j < used) {
        decodeOne(j);
      } else {
        piece.done.wait(false, std::memory_order_acquire);  // a helper has it
      }
    }
    for (const Piece::Line& line : piece.lines) {
      Line out;
      out.text = std::string_view(data + line.begin, line.length);
      out.begin = line.begin;
      if (line.record >= 0) out.step = &piece.records[line.record];
      if (line.memory >= 0) out.memory = &piece.memories[line.memory];
      if (!deliver(out)) {
        stopped = true;
        break;
      }
      pos = line.begin + line.length + 1;
    }
  }
  // The helpers reference this frame (and may still be decoding after a stop).
  helpers_done.wait();
  return pos;
}

}  // namespace fs::app
