// RunFollower: tails a run directory's events.jsonl and rank logs on a worker thread.
//
// Run it on a WorkerThread (app/common/worker_thread.h): start() in, batches out.
// Every poll (a QTimer, 50 ms by default; QFileSystemWatcher misses appends to an
// open file) reads what was appended since the last one and emits at most one
// batchReady() with everything it decoded: series points in columns (SeriesBatch),
// the other events, and the seqs delivered. A long backlog (opening a finished run) is
// read in chunks of FollowOptions::max_read_bytes, one batch each, with the thread's
// event loop free between chunks so stop() is never stuck behind a large file.
//
// NOTE [Follow guarantees]
//  - A line is decoded only once its '\n' is there; a partial last line waits.
//  - Step and memory lines take the fast path (fast_event_decoder.h), everything else the
//    protocol decoder; an undecodable line is reported (issue(), kUndecodable, naming the
//    line, byte offset and the decoder's message) and skipped.
//  - seq must increase by one. A jump is reported as kSeqGap and the later events are
//    delivered; an event whose seq was already delivered is reported as kDuplicate and
//    dropped. Lines that could not be decoded but carry the expected seq count as seen.
//  - Truncation (the file shrank below the read position) and replacement (another
//    inode at the path, e.g. a new file renamed over it) are reported, then the file is
//    read again from its start, silently skipping the seqs already delivered. Bytes
//    appended to the old file before it was replaced are read first.
//  - stop() emits stopped() with the position; a follower started from that position
//    continues exactly there: nothing lost, nothing delivered twice.
//  - For local runs, run.json's pid is checked about once a second while the manifest
//    says the run is live; when the process is gone, the file is read to its end first
//    and then processExited() is emitted once.
//
// Thread-safety: lives on one worker thread; cancel() may be called from any thread.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <cstdint>
#include <memory>

#include "app/monitor/follow_types.h"

class QTimer;

namespace fs::app {

struct FollowOptions {
  QString run_dir;
  FollowPosition start;  // default: from the beginning
  int poll_interval_ms = 50;
  std::size_t max_read_bytes = 16u << 20;  // events.jsonl bytes per batch at most
  std::size_t max_line_bytes = 64u << 20;  // longer lines are reported and skipped
  bool follow_logs = true;
  int process_check_interval_ms = 1000;  // 0: never check run.json's pid
};

class RunFollower : public QObject {
  Q_OBJECT
 public:
  explicit RunFollower(FollowOptions options, QObject* parent = nullptr);
  ~RunFollower() override;

  // Makes a running poll give up at its next line and start() / polls do nothing more;
  // for an owner about to destroy the thread. Thread-safe.
  void cancel();

 public slots:
  // Begins polling (the first poll runs at once).
  void start();
  // Stops polling and emits stopped() with the position after the last batch.
  void stop();
  // One poll now (tests and owners that know something was written).
  void poll();

 signals:
  void batchReady(fs::app::FollowBatchPtr batch);
  void issue(const fs::app::FollowIssue& issue);
  void logLines(const QList<fs::app::RankLogLine>& lines);
  // run.json's pid is no longer a live process while run.json says the run is live.
  void processExited(qint64 pid, const QString& message);
  void stopped(const fs::app::FollowPosition& position);

 private:
  struct State;
  bool readEvents();  // one chunk; true when more bytes are waiting
  void checkProcess();
  void emitPending(std::vector<FollowIssue>& issues, QList<RankLogLine>& lines, bool atEnd);

  FollowOptions options_;
  std::atomic<bool> cancel_{false};
  QTimer* timer_ = nullptr;
  std::unique_ptr<State> s_;
};

}  // namespace fs::app
