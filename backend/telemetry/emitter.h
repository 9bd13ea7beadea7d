// TelemetryEmitter: the engine's one writer of events.jsonl (or of any event file).
//
// NOTE [Training never waits for telemetry]
// emit() stamps the wall-clock time, moves the body into a bounded queue and returns;
// it never touches the disk and never waits for the writer (its only lock is held for
// a pointer push by emitters and a vector swap by the writer). When the queue holds
// `queue_capacity` events, the event is dropped and counted. A writer thread takes
// the whole queue at once, encodes the events, appends them to the sink and syncs
// it now and then (see NOTE [When events are durable]).
//
// NOTE [Seqs are assigned when written]
// The writer thread owns the run's only EventEncoder and assigns `seq` as it encodes,
// not when an event is queued. A dropped event therefore never consumed a seq, and the
// file stays gap-free (0, 1, 2, ... from the first line, continuing after a resume)
// however many events are dropped. The drops are reported in-band: right after the
// events that were queued before them, the writer adds a `warning` event with code
// `telemetry_dropped` and message "telemetry queue full: dropped N events" (drops only
// happen while the queue is full, so they all came after the batch the writer takes
// together with their count). The warning is made by the writer, so it needs no room in
// the queue. A failed append is rolled back (the sink cuts it) and its seqs are reused;
// the loss is reported as a `telemetry_write_failed` warning once writing works again.
// `t` is the time emit() was called, so across threads `t` may step back slightly
// while `seq` always increases.
//
// NOTE [A write failure that lasts]
// A failed append costs events, not the run: the writer retries with the next batch
// (about every batch_interval, as the lost-events warning waits to be written), and a
// disk that was full for a moment (another run's temporary file, our own checkpoint's
// temporary before the old checkpoint is pruned) loses a few events and says so. A
// failure that lasts is another matter: a run whose events cannot be written is blind
// to every client, and a disk that stays full will fail its next checkpoint anyway.
// writeFailure() tells the trainer, which stops the run with that error (NOTE [Telemetry
// that cannot be written] in backend/trainer/trainer.cpp), once appends have failed for
// `failure_grace` with none succeeding and one more writer round, made at that moment
// for what is queued, failed too. That last round matters after a checkpoint: while its
// temporary file filled the disk the events could not be written, but once the
// checkpoint is renamed and the old one pruned they can, and the run goes on.
//
// NOTE [When events are durable]
// Written lines survive a crash of the process as soon as they are appended (the page
// cache outlives the process); only events still queued are lost (typically the last
// few milliseconds). Against power loss the writer fdatasyncs after `sync_every_events`
// events or `sync_interval` since the first unsynced one, right after writing a
// run_started, state, checkpoint, control_ack, run_finished or error event, and on
// flush() and close().
//
// Heartbeats: with heartbeat_s > 0 the writer itself appends a `heartbeat` event every
// heartbeat_s seconds carrying the latest step and state the trainer published with
// setProgress() (two relaxed atomics), so a heartbeat also appears while the trainer is
// paused or stuck in a collective.
//
// Thread-safety: emit(), setProgress(), stats() and flush() may be called from any
// thread concurrently. close() (and the destructor) from one thread, once the other
// callers are done with flush(). Ownership: the emitter owns its sink and its thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/events.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/telemetry/event_sink.h"

namespace fs::telemetry {

struct EmitterOptions {
  std::size_t queue_capacity = 65536;  // events waiting for the writer; more are dropped
  double heartbeat_s = 0;              // heartbeat interval; <= 0: no heartbeats
  std::size_t sync_every_events = 1000;
  std::chrono::milliseconds sync_interval{1000};
  // How long the writer lets events collect before it wakes by itself.
  // emit() does not wake it (except when the queue is half full): waking a
  // thread on a shared core preempts the training thread, which measured
  // 50-100 us per step on a loaded 2-core VM - 1 % of a tiny step.
  std::chrono::milliseconds batch_interval{25};
  protocol::EventEncoder::Clock clock = protocol::unixMillisNow;  // `t` of every event
  // Where openFile's sink writes (io/write_env.h); null: the real file system. Must outlive the emitter.
  protocol::WriteEnv* env = nullptr;
  // How long appends may keep failing, none succeeding, before writeFailure() reports it
  // (NOTE [A write failure that lasts]).
  std::chrono::milliseconds failure_grace{10000};

  // telemetry.queue_capacity and telemetry.heartbeat_s; the rest keeps its default.
  static EmitterOptions fromConfig(const protocol::TelemetryConfig& config);
};

// Counters since the emitter opened. Snapshot values: they may move while read.
struct EmitterStats {
  std::uint64_t emitted = 0;   // emit() calls that queued their event
  std::uint64_t dropped = 0;   // emit() calls whose event was dropped (queue full or closed)
  std::uint64_t written = 0;   // lines appended, warnings and heartbeats included
  std::uint64_t lost = 0;      // lines whose append failed (their seqs were reused)
  std::uint64_t syncs = 0;     // successful syncs
  std::uint64_t next_seq = 0;  // seq the next written line will carry
};

class TelemetryEmitter {
 public:
  static constexpr std::chrono::milliseconds kNoTimeout = std::chrono::milliseconds::max();

  // Opens the run's events.jsonl (creating it, or resuming it as event_sink.h's NOTE
  // [Resuming an append-only event file] describes) and starts the writer thread.
  static StatusOr<std::unique_ptr<TelemetryEmitter>> open(const protocol::RunDir& run_dir,
                                                          EmitterOptions options = {});
  // The same for any event file, e.g. RunDir::agentEventsFile(node).
  static StatusOr<std::unique_ptr<TelemetryEmitter>> openFile(const std::filesystem::path& file,
                                                              EmitterOptions options = {});
  // Writes to `sink`, numbering from `first_seq`. For tests and other transports.
  // REQUIRES: sink != nullptr; options.queue_capacity >= 1.
  TelemetryEmitter(std::unique_ptr<EventSink> sink, std::uint64_t first_seq, EmitterOptions options);

  // Drains the queue and joins the writer (close()).
  ~TelemetryEmitter();
  TelemetryEmitter(const TelemetryEmitter&) = delete;
  TelemetryEmitter& operator=(const TelemetryEmitter&) = delete;

  // Queues `body`; true when queued, false when dropped (queue full, or after close()).
  // Never blocks on the writer or the disk; see NOTE [Training never waits for telemetry].
  bool emit(protocol::EventBody body);

  // What the next heartbeat reports. Cheap (two relaxed atomic stores).
  void setProgress(std::int64_t step, protocol::RunState state);
  void setStep(std::int64_t step) { hb_step_.store(step, std::memory_order_relaxed); }
  void setState(protocol::RunState state) {
    hb_state_.store(static_cast<int>(state), std::memory_order_relaxed);
  }

  // Waits until every event emitted before the call is written and synced. Returns the
  // first append/sync error since the previous flush, or IOError when `timeout` passes
  // first (a hung file system). Blocks the caller: not for the step loop.
  Status flush(std::chrono::milliseconds timeout = kNoTimeout);
  // Stops accepting events, drains the queue, syncs, joins the writer and closes the
  // sink. Returns the first error since the previous flush. Idempotent.
  Status close();

  // OK unless appends have kept failing for `failure_grace` (NOTE [A write failure that
  // lasts]); then an IOError with the sink's last error, which names the file, e.g.
  // "cannot append to /runs/a/events.jsonl: ...: No space left on device (no event written
  // for 10 s, 412 events lost)". One relaxed atomic load while writes succeed; once a
  // failure lasted, it waits for one writer round (flush(), at most failure_grace).
  // Not for the writer thread; not concurrently with close().
  Status writeFailure();

  EmitterStats stats() const;
  // Seq of the first line this emitter wrote (or will write): 0 for a new file.
  std::uint64_t firstSeq() const { return first_seq_; }

 private:
  struct Queued {
    protocol::EventBody body;
    std::int64_t t_ms = 0;
  };
  struct Chunk;  // encoded lines not yet appended (emitter.cpp)

  void writerLoop();
  void appendChunk(Chunk& chunk);
  void syncSink();
  void noteError(const Status& s);

  const EmitterOptions options_;
  const std::uint64_t first_seq_;

  // Shared between emitters and the writer, guarded by mu_.
  mutable std::mutex mu_;
  std::condition_variable wake_;     // the writer waits here
  std::condition_variable flushed_;  // flush() waits here
  std::vector<std::unique_ptr<Queued>> queue_;
  std::uint64_t dropped_unreported_ = 0;  // drops since the writer last took the queue
  bool closing_ = false;                  // close() began: emit() drops, the writer ends after one more round
  bool writer_done_ = false;              // the writer finished its last round
  bool closed_ = false;
  Status failure_;                     // the latest failed append's error (writeFailure())
  std::uint64_t flush_requested_ = 0;  // ticket of the latest flush() call
  std::uint64_t flush_done_ = 0;       // ticket the writer completed last
  Status flush_status_;                // error reported to the flush that completed last

  // Written by the writer thread, read by stats().
  std::atomic<std::uint64_t> emitted_{0}, dropped_{0}, written_{0}, lost_{0}, syncs_{0}, next_seq_{0};
  // Steady-clock nanoseconds of the first failed append since the last one that succeeded;
  // kNotFailing while appends succeed. Written by the writer thread.
  static constexpr std::int64_t kNotFailing = INT64_MIN;
  std::atomic<std::int64_t> failing_since_ns_{kNotFailing};
  // Published by the trainer for heartbeats.
  std::atomic<std::int64_t> hb_step_{0};
  std::atomic<int> hb_state_{static_cast<int>(protocol::RunState::kStarting)};

  // Writer thread only (after construction).
  std::unique_ptr<EventSink> sink_;
  protocol::EventEncoder encoder_;
  std::uint64_t dropped_unreported_writer_ = 0;  // drops taken from the queue, not yet warned about
  std::uint64_t lost_unreported_ = 0;            // events lost to append errors, not yet warned about
  std::uint64_t flush_done_local_ = 0;           // copy of flush_done_
  bool urgent_unsynced_ = false;                 // an urgent event was appended since the last sync
  Status last_write_error_;
  Status round_error_;  // first error since the last completed flush
  std::uint64_t unsynced_lines_ = 0;
  std::chrono::steady_clock::time_point first_unsynced_{};

  std::thread writer_;
};

}  // namespace fs::telemetry
