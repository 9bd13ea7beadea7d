// RunMonitor: one run directory followed live, on the GUI thread's side.
//
// Owns a RunFollower on its own worker thread and the SeriesStore it fills;
// does no I/O itself. See NOTE [Run monitor state and alerts] in run_monitor.cpp.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QList>
#include <QObject>
#include <QString>
#include <QTimer>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "app/monitor/byte_source.h"
#include "app/monitor/follow_types.h"
#include "app/monitor/heartbeat_board.h"
#include "app/monitor/measured_memory_tracker.h"
#include "app/monitor/series_store.h"
#include "app/monitor/stall_detector.h"
#include "backend/protocol/wire/events.h"
#include "backend/protocol/wire/run_manifest.h"

namespace fs::app {

class RunFollower;
template <class W>
class WorkerThread;

// The run as its events describe it so far.
struct RunStatus {
  std::optional<protocol::RunStartedEvent> started;  // the latest run_started
  std::optional<protocol::RunState> state;           // from state, heartbeat, run_finished
  std::int64_t step = 0;                             // latest step event's step
  int epoch = 0;
  std::int64_t total_steps = 0;              // from run_started
  std::optional<std::int64_t> last_step_ms;  // time of the latest step event
  double samples_per_s = 0;                  // latest step, all datasets
  std::optional<double> eta_s;               // remaining steps x median s/step
  std::optional<protocol::RunFinishedEvent> finished;
  std::uint64_t events = 0;  // events delivered
  // run.json's, as of the latest run_started (attemptLine() in run_attempts.h says them).
  std::vector<protocol::RunAttempt> attempts;
};

class RunMonitor : public QObject {
  Q_OBJECT
 public:
  using Clock = std::function<std::int64_t()>;  // unix ms
  // FollowOptions::process_alive: runs on the follower's thread and may block.
  using ProcessAlive = std::function<std::optional<bool>(const protocol::RunManifest&)>;
  struct Options {
    int poll_interval_ms = 50;
    // Pacing of a follow through a source (attach(source, ...), e.g. over SSH):
    // FollowOptions' idle_poll_interval_ms, log_poll_every, log_list_every
    // (NOTE [Idle polling] in run_follower.cpp). Local run directories poll evenly.
    int source_idle_poll_interval_ms = 250;
    int source_log_poll_every = 5;
    int source_log_list_every = 4;
    bool follow_logs = true;
    int process_check_interval_ms = 1000;  // 0: no dead-process check
    StallOptions stall;
    int stall_check_interval_ms = 1000;  // 0: only on batches and checkStall()
    Clock clock;                         // default: the wall clock
  };

  explicit RunMonitor(QObject* parent = nullptr);
  explicit RunMonitor(Options options, QObject* parent = nullptr);
  ~RunMonitor() override;

  // Starts following `run_dir` from `from`; detaches first if attached.
  void attach(const QString& runDir, const FollowPosition& from = {});
  // The same through a RunDirSource (e.g. a HostRunDir: a run on a cluster); runDir()
  // is then its describe(). No process check (FollowOptions::process_alive).
  // REQUIRES: source.
  void attach(std::shared_ptr<RunDirSource> source, const FollowPosition& from = {});
  // The same with a process check: processDied() when `processAlive` says false while
  // run.json says the run is live (e.g. cluster::agentsAliveCheck for a remote run).
  // REQUIRES: source.
  void attach(std::shared_ptr<RunDirSource> source, ProcessAlive processAlive,
              const FollowPosition& from = {});
  // Stops following; detached() brings the position to attach() from later.
  void detach();
  bool isAttached() const { return follower_ != nullptr; }
  const QString& runDir() const { return run_dir_; }

  SeriesStore* store() { return &store_; }
  const SeriesStore* store() const { return &store_; }
  const RunStatus& status() const { return status_; }
  const std::optional<protocol::LayoutEvent>& layout() const { return layout_; }
  const std::optional<protocol::MemoryEvent>& latestMemory() const { return memory_; }
  // Per rank latest and peak memory parts over the store's memory series. Up to date
  // from delivered() on; the store's own signals for a batch come before it is.
  const std::vector<MeasuredRank>& measuredMemory() const { return measured_.ranks(); }
  const std::vector<protocol::WarningEvent>& warnings() const { return warnings_; }
  const std::vector<protocol::ErrorEvent>& errors() const { return errors_; }
  const std::vector<protocol::CheckpointEvent>& checkpoints() const { return checkpoints_; }
  // The loss-spike guard's rollbacks, in order, each with its event time (unix ms); the
  // points they abandoned are the store's abandoned segments (NOTE [Rewinds]).
  struct Rollback {
    protocol::RollbackEvent event;
    std::int64_t t_ms = 0;
  };
  const std::vector<Rollback>& rollbacks() const { return rollbacks_; }
  // Per rank collectives from heartbeat events (NOTE [Heartbeat board]).
  const HeartbeatBoard& heartbeats() const { return heartbeats_; }
  bool isStalled() const { return stall_.stalled(); }

 public slots:
  // Evaluates the stall alert now (the timer calls it too).
  void checkStall();

 signals:
  // After each batch was applied to the store and the status.
  void delivered(const fs::app::FollowBatchPtr& batch);
  void statusChanged();
  void runStarted(const fs::protocol::RunStartedEvent& event);
  void layoutChanged();
  // Once per batch that held memory events (a backlog read on open brings many): latestMemory() is the last.
  void memoryReported();
  void warningAdded(const fs::protocol::WarningEvent& event);
  void errorReported(const fs::protocol::ErrorEvent& event);
  void checkpointAdded(const fs::protocol::CheckpointEvent& event);
  void rollbackAdded(const fs::protocol::RollbackEvent& event);
  // Once per batch that held heartbeat events with ranks: heartbeats() changed.
  void heartbeatsChanged();
  void controlAcknowledged(const fs::protocol::ControlAckEvent& event);
  void runFinished(const fs::protocol::RunFinishedEvent& event);
  void issue(const fs::app::FollowIssue& issue);  // from the follower
  void logLines(const QList<fs::app::RankLogLine>& lines);
  void stalled(const QString& why);
  void recovered();
  void processDied(const QString& why);
  void detached(const fs::app::FollowPosition& position);

 private:
  void apply(const FollowBatchPtr& batch);
  void applyEvent(const protocol::Event& e);
  void updateEta();
  // source: null for a local runDir.
  void attachTo(const QString& runDir, std::shared_ptr<RunDirSource> source, ProcessAlive processAlive,
                const FollowPosition& from);
  void stopFollower();
  bool live() const;

  Options options_;
  SeriesStore store_;
  MeasuredMemoryTracker measured_;  // follows store_: updated after each append, cleared with it
  QString run_dir_;
  std::unique_ptr<WorkerThread<RunFollower>> thread_;
  RunFollower* follower_ = nullptr;
  std::uint64_t generation_ = 0;  // signals from an older follower are ignored
  bool caught_up_ = false;
  RunStatus status_;
  std::optional<protocol::LayoutEvent> layout_;
  std::optional<protocol::MemoryEvent> memory_;
  bool memory_arrived_ = false;  // in the batch being applied
  std::vector<protocol::WarningEvent> warnings_;
  std::vector<protocol::ErrorEvent> errors_;
  std::vector<protocol::CheckpointEvent> checkpoints_;
  std::vector<Rollback> rollbacks_;
  HeartbeatBoard heartbeats_;
  bool heartbeats_arrived_ = false;  // in the batch being applied
  StallDetector stall_;
  QTimer stall_timer_;
};

}  // namespace fs::app
