// RunFollower: tails a run directory's events.jsonl and rank logs on a worker thread;
// a local one, or any other through a RunDirSource (e.g. HostRunDir: a run on a
// cluster, read over SFTP).
//
// Run it on a WorkerThread (app/common/worker_thread.h): start() in, batchReady()
// out. See NOTE [Polling a run directory] and NOTE [Follow guarantees] in
// run_follower.cpp.
//
// Thread-safety: lives on one worker thread; cancel() may be called from any thread.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "app/monitor/byte_source.h"
#include "app/monitor/follow_types.h"

class QTimer;

namespace fs::protocol {
struct RunManifest;
}

namespace fs::app {

struct FollowOptions {
  QString run_dir;  // a local run directory; ignored when `source` is set
  // The run directory to follow instead of run_dir (e.g. a HostRunDir); used on the
  // follower's thread only, from start() to stop().
  std::shared_ptr<RunDirSource> source;
  FollowPosition start;  // default: from the beginning
  int poll_interval_ms = 50;
  // Pacing for sources where every look is a network round trip (NOTE [Idle polling]
  // in run_follower.cpp). After kIdlePollsBeforeBackoff polls that found nothing new
  // the interval doubles, up to idle_poll_interval_ms; anything new brings it back to
  // poll_interval_ms. <= poll_interval_ms: the interval never changes.
  int idle_poll_interval_ms = 0;
  // Rank logs are read at every log_poll_every-th poll and at every poll that found
  // events; logs/ is listed at every log_list_every-th read (and while no log is known).
  int log_poll_every = 1;
  int log_list_every = 1;
  std::size_t max_read_bytes = 16u << 20;  // events.jsonl bytes per batch at most
  std::size_t max_line_bytes = 64u << 20;  // longer lines are reported and skipped
  bool follow_logs = true;
  int process_check_interval_ms = 1000;  // 0: never check run.json's pid
  // Whether the process of a live run (run.json, with a pid) is still running: true,
  // false, or nullopt when it cannot tell. Unset: for a local run_dir, run.json's pid on this
  // machine (isProcessAlive) when its launcher is local; with a `source`, no check.
  // Called on the follower's thread; may block (a remote command).
  std::function<std::optional<bool>(const protocol::RunManifest&)> process_alive;
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

 public:
  static constexpr int kIdlePollsBeforeBackoff = 10;
  // The interval after a poll: `base` when it saw something new, else doubled (up to
  // `idleMax`) once `idlePolls` polls in a row found nothing.
  static int nextPollIntervalMs(int current, int base, int idleMax, int idlePolls, bool sawNew);
  // The polling interval now (ms). Follower's thread.
  int pollIntervalMs() const { return interval_ms_; }

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
  // run.json as the path names it now; nullopt when missing or unreadable.
  std::optional<protocol::RunManifest> readManifest();
  std::optional<std::vector<protocol::RunAttempt>> readAttempts();
  void emitPending(std::vector<FollowIssue>& issues, QList<RankLogLine>& lines, bool atEnd);
  void pace(bool sawNew);

  FollowOptions options_;
  std::atomic<bool> cancel_{false};
  QTimer* timer_ = nullptr;
  int interval_ms_ = 0;
  std::unique_ptr<State> s_;
};

}  // namespace fs::app
