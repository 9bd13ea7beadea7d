#include "app/monitor/run_monitor.h"

#include <algorithm>
#include <variant>

#include "app/common/worker_thread.h"
#include "app/monitor/run_follower.h"
#include "app/monitor/series_names.h"

// NOTE [Run monitor state and alerts]
// Owns a RunFollower on its own worker thread and the SeriesStore it fills, and keeps
// the run's current state from the events: run_started, the latest step and epoch,
// total steps, samples/s, ETA, the run state, the latest layout and memory event
// (the layout view shows which units a rank had gathered at its peak), each rank's
// measured memory (MeasuredMemoryTracker, updated with every batch so that reading
// it never walks the run's history), warnings, errors, checkpoints, the guard's
// rollbacks, each rank's collectives from heartbeats (HeartbeatBoard); control acks
// are re-emitted for a control client to match.
// It also raises two alerts:
//  - stalled(why) once when the last step is older than max(floor, K x the median
//    interval between step events) while the run is running and the file has been
//    read to its end (StallDetector), recovered() when it is over. Time comes from an
//    injectable clock, so a test drives it with checkStall().
//  - processDied(why) when run.json's pid (local runs; for others the check given to
//    attach()) is gone while the run is still
//    live by its events.
// Nothing here does I/O: the follower reads, the monitor applies batches.
//
// attach() with a position from detached() continues the same store: nothing is lost
// or drawn twice. attach() from the start (the default position), or of another run
// directory, clears it first.
//
// detach() never blocks: the follower stops at its next turn and detached() follows.
// attach() while attached and the destructor cancel the follower and join its thread;
// a read in progress gives up at its next line, so that wait is bounded by one read.

namespace fs::app {
namespace {

// Median seconds per optimizer step over the last `window` step events.
std::optional<double> medianSecondsPerStep(std::span<const double> steps, std::span<const double> times,
                                           std::size_t window = 100) {
  if (steps.size() < 2 || times.size() != steps.size()) return std::nullopt;
  const std::size_t n = std::min(window, steps.size() - 1);
  std::vector<double> rates;
  rates.reserve(n);
  for (std::size_t i = steps.size() - n; i < steps.size(); ++i) {
    const double ds = steps[i] - steps[i - 1];
    if (ds > 0) rates.push_back((times[i] - times[i - 1]) / ds);
  }
  if (rates.empty()) return std::nullopt;
  auto mid = rates.begin() + static_cast<std::ptrdiff_t>(rates.size() / 2);
  std::nth_element(rates.begin(), mid, rates.end());
  return *mid;
}

}  // namespace

RunMonitor::RunMonitor(QObject* parent) : RunMonitor(Options{}, parent) {}

RunMonitor::RunMonitor(Options options, QObject* parent)
    : QObject(parent), options_(std::move(options)), stall_(options_.stall) {
  if (!options_.clock) options_.clock = protocol::unixMillisNow;
  connect(&stall_timer_, &QTimer::timeout, this, &RunMonitor::checkStall);
}

RunMonitor::~RunMonitor() {
  stopFollower();
}

void RunMonitor::stopFollower() {
  if (follower_ == nullptr) return;
  follower_->cancel();  // a catch-up read in progress gives up at its next line
  ++generation_;
  stall_timer_.stop();
  thread_.reset();
  follower_ = nullptr;
}

void RunMonitor::attach(std::shared_ptr<RunDirSource> source, const FollowPosition& from) {
  const QString described = QString::fromStdString(source->describe());
  attachTo(described, std::move(source), nullptr, from);
}

void RunMonitor::attach(std::shared_ptr<RunDirSource> source, ProcessAlive processAlive,
                        const FollowPosition& from) {
  const QString described = QString::fromStdString(source->describe());
  attachTo(described, std::move(source), std::move(processAlive), from);
}

void RunMonitor::attach(const QString& runDir, const FollowPosition& from) {
  attachTo(runDir, nullptr, nullptr, from);
}

void RunMonitor::attachTo(const QString& runDir, std::shared_ptr<RunDirSource> source,
                          ProcessAlive processAlive, const FollowPosition& from) {
  stopFollower();
  const bool fresh = from == FollowPosition{};
  if (fresh || runDir != run_dir_) {
    store_.clear();
    measured_.clear();
    status_ = RunStatus{};
    layout_.reset();
    memory_.reset();
    warnings_.clear();
    errors_.clear();
    checkpoints_.clear();
    rollbacks_.clear();
    heartbeats_.clear();
    stall_ = StallDetector(options_.stall);
  }
  run_dir_ = runDir;
  caught_up_ = false;

  FollowOptions fo;
  fo.run_dir = runDir;
  fo.source = std::move(source);
  fo.start = from;
  fo.poll_interval_ms = options_.poll_interval_ms;
  if (fo.source) {
    fo.idle_poll_interval_ms = options_.source_idle_poll_interval_ms;
    fo.log_poll_every = options_.source_log_poll_every;
    fo.log_list_every = options_.source_log_list_every;
  }
  fo.follow_logs = options_.follow_logs;
  fo.process_check_interval_ms = options_.process_check_interval_ms;
  fo.process_alive = std::move(processAlive);
  follower_ = new RunFollower(fo);
  const std::uint64_t gen = ++generation_;
  connect(follower_, &RunFollower::batchReady, this, [this, gen](const FollowBatchPtr& b) {
    if (gen == generation_) apply(b);
  });
  connect(follower_, &RunFollower::issue, this, [this, gen](const FollowIssue& i) {
    if (gen == generation_) emit issue(i);
  });
  connect(follower_, &RunFollower::logLines, this, [this, gen](const QList<RankLogLine>& lines) {
    if (gen == generation_) emit logLines(lines);
  });
  connect(follower_, &RunFollower::processExited, this, [this, gen](qint64, const QString& why) {
    if (gen != generation_) return;
    if (!status_.state || !protocol::isTerminal(*status_.state)) emit processDied(why);
  });
  connect(follower_, &RunFollower::stopped, this, [this, gen](const FollowPosition& position) {
    if (gen != generation_) return;
    stopFollower();
    emit detached(position);
  });
  thread_ = std::make_unique<WorkerThread<RunFollower>>(follower_, QStringLiteral("run-follower"));
  QMetaObject::invokeMethod(follower_, &RunFollower::start, Qt::QueuedConnection);
  if (options_.stall_check_interval_ms > 0) stall_timer_.start(options_.stall_check_interval_ms);
}

void RunMonitor::detach() {
  if (follower_ == nullptr) return;
  QMetaObject::invokeMethod(follower_, &RunFollower::stop, Qt::QueuedConnection);
}

void RunMonitor::applyEvent(const protocol::Event& e) {
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, protocol::RunStartedEvent>) {
          status_.started = body;
          status_.total_steps = body.total_steps;
          emit runStarted(body);
        } else if constexpr (std::is_same_v<T, protocol::LayoutEvent>) {
          layout_ = body;
          emit layoutChanged();
        } else if constexpr (std::is_same_v<T, protocol::MemoryEvent>) {
          memory_ = body;
          memory_arrived_ = true;
        } else if constexpr (std::is_same_v<T, protocol::StateEvent>) {
          status_.state = body.state;
        } else if constexpr (std::is_same_v<T, protocol::HeartbeatEvent>) {
          status_.state = body.state;
          if (!body.ranks.empty()) {
            heartbeats_.update(body, e.t);
            heartbeats_arrived_ = true;
          }
        } else if constexpr (std::is_same_v<T, protocol::RollbackEvent>) {
          rollbacks_.push_back({body, e.t});
          emit rollbackAdded(body);
        } else if constexpr (std::is_same_v<T, protocol::RunFinishedEvent>) {
          status_.finished = body;
          status_.state = body.status == protocol::FinishStatus::kFailed ? protocol::RunState::kFailed
                                                                         : protocol::RunState::kFinished;
          emit runFinished(body);
        } else if constexpr (std::is_same_v<T, protocol::ErrorEvent>) {
          errors_.push_back(body);
          emit errorReported(body);
        } else if constexpr (std::is_same_v<T, protocol::WarningEvent>) {
          warnings_.push_back(body);
          emit warningAdded(body);
        } else if constexpr (std::is_same_v<T, protocol::CheckpointEvent>) {
          checkpoints_.push_back(body);
          emit checkpointAdded(body);
        } else if constexpr (std::is_same_v<T, protocol::ControlAckEvent>) {
          emit controlAcknowledged(body);
        }
      },
      e.body);
}

void RunMonitor::apply(const FollowBatchPtr& batch) {
  store_.append(batch->series);
  measured_.update(store_);
  memory_arrived_ = false;
  heartbeats_arrived_ = false;
  for (const protocol::Event& e : batch->events) applyEvent(e);
  if (memory_arrived_) emit memoryReported();
  if (heartbeats_arrived_) emit heartbeatsChanged();
  if (batch->last_step) {
    const auto& s = std::get<protocol::StepEvent>(batch->last_step->body);
    status_.step = s.step;
    status_.epoch = s.epoch;
    status_.last_step_ms = batch->last_step->t;
    double rate = 0;
    for (const auto& [dataset, v] : s.samples_per_s) rate += v;
    status_.samples_per_s = rate;
  }
  status_.events += batch->seqs.size();
  if (batch->attempts) status_.attempts = *batch->attempts;
  if (batch->at_end) caught_up_ = true;
  updateEta();
  emit statusChanged();
  emit delivered(batch);
  checkStall();
}

void RunMonitor::updateEta() {
  const SeriesStore::SeriesId id = store_.find(series::kStepTime);
  if (id == SeriesStore::kNoSeries || status_.total_steps <= 0) {
    status_.eta_s.reset();
    return;
  }
  const auto per_step =
      medianSecondsPerStep(store_.x(id, {XKind::kStep, {}}), store_.x(id, {XKind::kWallTime, {}}));
  if (!per_step) {
    status_.eta_s.reset();
    return;
  }
  status_.eta_s =
      static_cast<double>(std::max<std::int64_t>(0, status_.total_steps - status_.step)) * *per_step;
}

bool RunMonitor::live() const {
  if (follower_ == nullptr || !caught_up_) return false;
  if (status_.state) return *status_.state == protocol::RunState::kRunning;
  return status_.last_step_ms.has_value();  // no state event yet, but steps: it runs
}

void RunMonitor::checkStall() {
  std::optional<double> median;
  const SeriesStore::SeriesId id = store_.find(series::kStepTime);
  if (id != SeriesStore::kNoSeries)
    median = StallDetector::medianInterval(store_.x(id, {XKind::kWallTime, {}}));
  std::string why;
  const auto last_step = status_.last_step_ms ? std::optional<std::int64_t>(status_.step) : std::nullopt;
  switch (stall_.evaluate(options_.clock(), live(), status_.last_step_ms, last_step, median, &why)) {
    case StallDetector::Change::kStalled:
      emit stalled(QString::fromStdString(why));
      break;
    case StallDetector::Change::kRecovered:
      emit recovered();
      break;
    case StallDetector::Change::kNone:
      break;
  }
}

}  // namespace fs::app
