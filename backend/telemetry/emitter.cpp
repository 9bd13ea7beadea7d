#include "backend/telemetry/emitter.h"

#include <pthread.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace fs::telemetry {

using protocol::EventBody;
using protocol::EventEncoder;
using Clock = std::chrono::steady_clock;

namespace {

// Appends are cut into pieces of about this size so one huge backlog does not need
// one huge string.
constexpr std::size_t kMaxChunkBytes = 1u << 20;

// Events after which the writer syncs at once: rare, and what a client acts on.
bool isUrgent(const EventBody& body) {
  return std::holds_alternative<protocol::RunStartedEvent>(body) ||
         std::holds_alternative<protocol::StateEvent>(body) ||
         std::holds_alternative<protocol::CheckpointEvent>(body) ||
         std::holds_alternative<protocol::ControlAckEvent>(body) ||
         std::holds_alternative<protocol::RunFinishedEvent>(body) ||
         std::holds_alternative<protocol::ErrorEvent>(body);
}

}  // namespace

struct TelemetryEmitter::Chunk {
  std::string bytes;
  std::uint64_t lines = 0;           // every line in `bytes`
  std::uint64_t events = 0;          // of them, events that came through emit()
  std::uint64_t drops_reported = 0;  // drops a telemetry_dropped warning in `bytes` reports
  std::uint64_t lost_reported = 0;   // lost events a telemetry_write_failed warning reports
  bool urgent = false;
};

EmitterOptions EmitterOptions::fromConfig(const protocol::TelemetryConfig& config) {
  EmitterOptions o;
  o.queue_capacity = static_cast<std::size_t>(std::max<std::int64_t>(1, config.queue_capacity));
  o.heartbeat_s = config.heartbeat_s;
  return o;
}

StatusOr<std::unique_ptr<TelemetryEmitter>> TelemetryEmitter::open(const protocol::RunDir& run_dir,
                                                                   EmitterOptions options) {
  return openFile(run_dir.eventsFile(), std::move(options));
}

StatusOr<std::unique_ptr<TelemetryEmitter>> TelemetryEmitter::openFile(const std::filesystem::path& file,
                                                                       EmitterOptions options) {
  auto sink = FileEventSink::open(file, options.env);
  if (!sink) return sink.status();
  std::uint64_t first_seq = sink.value()->resume().next_seq;
  return std::make_unique<TelemetryEmitter>(std::move(sink).value(), first_seq, std::move(options));
}

TelemetryEmitter::TelemetryEmitter(std::unique_ptr<EventSink> sink, std::uint64_t first_seq,
                                   EmitterOptions options)
    : options_(std::move(options)),
      first_seq_(first_seq),
      next_seq_(first_seq),
      sink_(std::move(sink)),
      encoder_(first_seq, options_.clock) {
  queue_.reserve(std::min<std::size_t>(options_.queue_capacity, 4096));
  writer_ = std::thread([this] { writerLoop(); });
}

TelemetryEmitter::~TelemetryEmitter() {
  close();
}

bool TelemetryEmitter::emit(EventBody body) {
  // Allocate before locking; `item` outlives the lock, so a dropped event is freed after it.
  auto item = std::make_unique<Queued>(Queued{std::move(body), options_.clock()});
  bool half_full = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_ || queue_.size() >= options_.queue_capacity) {
      if (!closing_) ++dropped_unreported_;
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    queue_.push_back(std::move(item));
    // Exactly at the threshold, so a burst wakes the writer once, not per event.
    half_full = queue_.size() == std::max<std::size_t>(1, options_.queue_capacity / 2);
  }
  emitted_.fetch_add(1, std::memory_order_relaxed);
  if (half_full) wake_.notify_one();
  return true;
}

void TelemetryEmitter::setProgress(std::int64_t step, protocol::RunState state) {
  setStep(step);
  setState(state);
}

Status TelemetryEmitter::flush(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (writer_done_) return flush_status_;
  std::uint64_t ticket = ++flush_requested_;
  wake_.notify_one();
  auto done = [&] { return flush_done_ >= ticket || writer_done_; };
  if (timeout == kNoTimeout) {
    flushed_.wait(lock, done);
  } else if (!flushed_.wait_for(lock, timeout, done)) {
    return Status::ioError("telemetry flush timed out after " + std::to_string(timeout.count()) +
                           " ms: the writer is still appending (is the file system hung?)");
  }
  return flush_status_;
}

Status TelemetryEmitter::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return flush_status_;
    closing_ = true;
  }
  wake_.notify_one();
  if (writer_.joinable()) writer_.join();
  sink_.reset();
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  return flush_status_;
}

Status TelemetryEmitter::writeFailure() {
  const auto failingFor = [&]() -> std::optional<Clock::duration> {
    const std::int64_t since = failing_since_ns_.load(std::memory_order_relaxed);
    if (since == kNotFailing) return std::nullopt;
    const auto d = Clock::now().time_since_epoch() - std::chrono::nanoseconds(since);
    if (d < options_.failure_grace) return std::nullopt;
    return d;
  };
  if (!failingFor()) return Status::ok();
  // One more round for what is queued now: a failure that ended meanwhile does not count
  // (NOTE [A write failure that lasts]). Its own error is the one reported below.
  (void)flush(std::max(options_.failure_grace, std::chrono::milliseconds(1)));
  const auto lasted = failingFor();
  if (!lasted) return Status::ok();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(*lasted).count();
  std::lock_guard<std::mutex> lock(mu_);
  return Status::ioError(failure_.message() + " (no event written for " + std::to_string(seconds) + " s, " +
                         std::to_string(lost_.load(std::memory_order_relaxed)) + " events lost)");
}

EmitterStats TelemetryEmitter::stats() const {
  EmitterStats s;
  s.emitted = emitted_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.written = written_.load(std::memory_order_relaxed);
  s.lost = lost_.load(std::memory_order_relaxed);
  s.syncs = syncs_.load(std::memory_order_relaxed);
  s.next_seq = next_seq_.load(std::memory_order_relaxed);
  return s;
}

void TelemetryEmitter::noteError(const Status& s) {
  if (round_error_.isOk()) round_error_ = s;
  last_write_error_ = s;
}

// Appends one chunk. On failure the sink has cut it back, so its seqs are handed out
// again (NOTE [Seqs are assigned when written]) and its events count as lost.
void TelemetryEmitter::appendChunk(Chunk& chunk) {
  if (chunk.bytes.empty()) return;
  Status s = sink_->append(chunk.bytes);
  if (s) {
    failing_since_ns_.store(kNotFailing, std::memory_order_relaxed);
    next_seq_.store(encoder_.nextSeq(), std::memory_order_relaxed);
    written_.fetch_add(chunk.lines, std::memory_order_relaxed);
    dropped_unreported_writer_ -= chunk.drops_reported;
    lost_unreported_ -= chunk.lost_reported;
    if (unsynced_lines_ == 0) first_unsynced_ = Clock::now();
    unsynced_lines_ += chunk.lines;
    urgent_unsynced_ = urgent_unsynced_ || chunk.urgent;
  } else {
    encoder_ = EventEncoder(next_seq_.load(std::memory_order_relaxed), options_.clock);
    lost_.fetch_add(chunk.events, std::memory_order_relaxed);
    lost_unreported_ += chunk.events;
    noteError(s);
    {
      std::lock_guard<std::mutex> lock(mu_);
      failure_ = s;
    }
    if (failing_since_ns_.load(std::memory_order_relaxed) == kNotFailing) {
      failing_since_ns_.store(Clock::now().time_since_epoch() / std::chrono::nanoseconds(1),
                              std::memory_order_relaxed);
    }
  }
  chunk = Chunk{};
}

void TelemetryEmitter::syncSink() {
  Status s = sink_->sync();
  if (s) {
    syncs_.fetch_add(1, std::memory_order_relaxed);
  } else {
    noteError(s);
  }
  // Also after a failed sync: retrying in a loop would spin; the error is reported.
  unsynced_lines_ = 0;
  urgent_unsynced_ = false;
}

void TelemetryEmitter::writerLoop() {
  ::pthread_setname_np(::pthread_self(), "fs-telemetry");
  const bool heartbeats = options_.heartbeat_s > 0;
  const auto heartbeat_period =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.heartbeat_s));
  Clock::time_point next_heartbeat = Clock::now() + heartbeat_period;
  std::vector<std::unique_ptr<Queued>> batch;
  batch.reserve(std::min<std::size_t>(options_.queue_capacity, 4096));
  Chunk chunk;

  for (;;) {
    std::uint64_t ticket = 0;
    bool closing = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // The writer wakes by itself every batch_interval (see EmitterOptions).
      std::optional<Clock::time_point> deadline = Clock::now() + options_.batch_interval;
      if (heartbeats) deadline = std::min(*deadline, next_heartbeat);
      if (unsynced_lines_ > 0) {
        Clock::time_point sync_at = first_unsynced_ + options_.sync_interval;
        deadline = std::min(*deadline, sync_at);
      }
      const std::size_t half = std::max<std::size_t>(1, options_.queue_capacity / 2);
      wake_.wait_until(lock, *deadline,
                       [&] { return closing_ || flush_requested_ > flush_done_ || queue_.size() >= half; });
      batch.swap(queue_);
      // Every drop counted here happened after every event in `batch` was queued:
      // events are only dropped while the queue is full.
      dropped_unreported_writer_ += std::exchange(dropped_unreported_, 0);
      ticket = flush_requested_;
      closing = closing_;
    }

    std::size_t taken = 0;  // events of `batch` encoded so far
    try {
      auto encode = [&](EventBody body, std::optional<std::int64_t> t_ms, bool from_queue) {
        if (isUrgent(body)) chunk.urgent = true;
        chunk.bytes += t_ms ? encoder_.encode(std::move(body), *t_ms) : encoder_.encode(std::move(body));
        ++chunk.lines;
        if (from_queue) ++chunk.events;
        if (chunk.bytes.size() >= kMaxChunkBytes) appendChunk(chunk);
      };
      if (lost_unreported_ > 0) {
        chunk.lost_reported = lost_unreported_;
        encode(protocol::WarningEvent{"telemetry_write_failed",
                                      "telemetry write failed (" + last_write_error_.message() + "): lost " +
                                          std::to_string(lost_unreported_) + " events",
                                      std::nullopt},
               std::nullopt, false);
      }
      for (auto& item : batch) {
        encode(std::move(item->body), item->t_ms, true);
        ++taken;
      }
      batch.clear();
      if (dropped_unreported_writer_ > 0) {
        chunk.drops_reported = dropped_unreported_writer_;
        encode(protocol::WarningEvent{"telemetry_dropped",
                                      "telemetry queue full: dropped " +
                                          std::to_string(dropped_unreported_writer_) + " events",
                                      std::nullopt},
               std::nullopt, false);
      }
      if (heartbeats && Clock::now() >= next_heartbeat) {
        protocol::HeartbeatEvent hb;
        hb.step = hb_step_.load(std::memory_order_relaxed);
        hb.state = static_cast<protocol::RunState>(hb_state_.load(std::memory_order_relaxed));
        encode(std::move(hb), std::nullopt, false);
        next_heartbeat = Clock::now() + heartbeat_period;
      }
      appendChunk(chunk);
    } catch (const std::exception& e) {
      // Only allocation failure can get here: what is not appended yet is lost, like a
      // failed append (the chunk's events and the batch's events not reached).
      std::uint64_t lost = chunk.events + (batch.size() - std::min(taken, batch.size()));
      batch.clear();
      Status failed = Status::ioError(std::string("telemetry writer: ") + e.what());
      encoder_ = EventEncoder(next_seq_.load(std::memory_order_relaxed), options_.clock);
      lost_.fetch_add(lost, std::memory_order_relaxed);
      lost_unreported_ += lost;
      noteError(failed);
      chunk = Chunk{};
    }

    bool flushing = ticket > flush_done_local_;
    if (unsynced_lines_ > 0 &&
        (flushing || closing || urgent_unsynced_ || unsynced_lines_ >= options_.sync_every_events ||
         Clock::now() - first_unsynced_ >= options_.sync_interval)) {
      syncSink();
    }
    if (flushing || closing) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        flush_done_ = ticket;
        flush_status_ = std::exchange(round_error_, Status::ok());
        writer_done_ = closing;
      }
      flush_done_local_ = ticket;
      flushed_.notify_all();
    }
    if (closing) return;
  }
}

}  // namespace fs::telemetry
