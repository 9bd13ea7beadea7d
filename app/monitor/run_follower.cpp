#include "app/monitor/run_follower.h"

#include <QElapsedTimer>
#include <QFile>
#include <QMetaObject>
#include <QThread>
#include <QTimer>
#include <algorithm>
#include <filesystem>

#include "app/monitor/event_tail.h"
#include "app/monitor/local_file_source.h"
#include "app/monitor/process_probe.h"
#include "app/monitor/rank_log_tail.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/protocol/wire/run_manifest.h"

// NOTE [Polling a run directory]
// Run it on a WorkerThread (app/common/worker_thread.h): start() in, batches out.
// Every poll (a QTimer, 50 ms by default; QFileSystemWatcher misses appends to an
// open file) reads what was appended since the last one and emits at most one
// batchReady() with everything it decoded: series points in columns (SeriesBatch),
// the other events, and the seqs delivered. A long backlog (opening a finished run) is
// read in chunks of FollowOptions::max_read_bytes, one batch each, with the thread's
// event loop free between chunks so stop() is never stuck behind a large file.
//
// NOTE [Idle polling]
// A local poll costs a few system calls; a remote one a network round trip per file
// (stat, read) and per listing of logs/, so a 2-rank run cost ~7 round trips every
// 50 ms while nothing happened, growing with the ranks. Remote follows
// (RunMonitor::attach with a source) therefore pace themselves: events.jsonl is looked
// at every poll, rank logs every few polls (and whenever events arrived, since a step
// usually brings log lines), logs/ listed every few reads of the logs; and a follow
// that has found nothing for kIdlePollsBeforeBackoff polls doubles its interval up to
// FollowOptions::idle_poll_interval_ms, so an idle run costs a few round trips a
// second. The first new byte brings the interval back at once; a step after a long
// quiet waits half the longest interval on average, within the latency the product
// promises (docs/benchmarks.md).
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
//    says the run is live (for others, FollowOptions::process_alive, when given); when
//    the process is gone, the file is read to its end first and then processExited()
//    is emitted once.
//  - All of it holds for a run directory on another machine too (FollowOptions::source):
//    a failed read is reported once and retried from the same position at the next
//    poll; replacement is told by content where no inode is known (NOTE [Sources and
//    decoders] in byte_source.h).

namespace fs::app {

namespace {

// run.json is a few hundred bytes; anything past this is not a manifest.
constexpr std::size_t kMaxManifestBytes = 1u << 20;

std::optional<bool> localProcessAlive(const protocol::RunManifest& m) {
  if (m.launcher != protocol::LauncherKind::kLocal || !m.pid) return std::nullopt;
  return isProcessAlive(*m.pid);
}

}  // namespace

struct RunFollower::State {
  std::shared_ptr<RunDirSource> dir;
  std::unique_ptr<ByteSource> manifest;  // run.json, read again at every check
  std::unique_ptr<EventTail> events;
  std::unique_ptr<RankLogTail> logs;
  QElapsedTimer since_process_check;
  std::optional<std::int64_t> reported_pid;  // processExited already emitted for it
  bool running = false;
  bool continuation_queued = false;
  int idle_polls = 0;        // polls in a row that found nothing new
  int polls_since_logs = 0;  // polls since the rank logs were last read
};

RunFollower::RunFollower(FollowOptions options, QObject* parent)
    : QObject(parent), options_(std::move(options)), s_(std::make_unique<State>()) {
  s_->dir = options_.source;
  if (!s_->dir) {
    s_->dir = std::make_shared<LocalRunDir>(QFile::encodeName(options_.run_dir).toStdString());
    if (!options_.process_alive) options_.process_alive = localProcessAlive;
  }
}

RunFollower::~RunFollower() = default;

void RunFollower::cancel() {
  cancel_.store(true, std::memory_order_relaxed);
}

void RunFollower::start() {
  if (s_->running || cancel_.load(std::memory_order_relaxed)) return;
  s_->running = true;
  s_->events =
      std::make_unique<EventTail>(s_->dir->open(std::string(protocol::kEventsFileName)), options_.start,
                                  options_.max_read_bytes, options_.max_line_bytes, &cancel_);
  if (options_.follow_logs)
    s_->logs = std::make_unique<RankLogTail>(s_->dir, options_.start.log_offsets, options_.log_list_every);
  s_->since_process_check.start();
  if (timer_ == nullptr) {
    timer_ = new QTimer(this);
    connect(timer_, &QTimer::timeout, this, &RunFollower::poll);
    // The owner deletes this worker after its thread has ended; a timer must be
    // deleted on its own thread, so it goes while the thread still runs.
    connect(
        QThread::currentThread(), &QThread::finished, this,
        [this] {
          delete timer_;
          timer_ = nullptr;
        },
        Qt::DirectConnection);
  }
  interval_ms_ = options_.poll_interval_ms;
  s_->idle_polls = 0;
  timer_->start(interval_ms_);
  poll();
}

void RunFollower::stop() {
  if (!s_->running) return;
  s_->running = false;
  timer_->stop();
  // Every batch was emitted at the end of its poll, so the position after the last
  // batch is the position now.
  FollowPosition position = s_->events->position();
  if (s_->logs) position.log_offsets = s_->logs->offsets();
  s_->events.reset();
  s_->logs.reset();
  emit stopped(position);
}

void RunFollower::emitPending(std::vector<FollowIssue>& issues, QList<RankLogLine>& lines, bool atEnd) {
  for (const FollowIssue& i : issues) emit issue(i);
  issues.clear();
  if (s_->events->hasPending()) {
    auto batch = std::make_shared<FollowBatch>(s_->events->takeBatch());
    if (s_->logs) batch->position.log_offsets = s_->logs->offsets();
    batch->at_end = atEnd;
    const bool started = std::any_of(
        batch->events.begin(), batch->events.end(),
        [](const protocol::Event& e) { return std::holds_alternative<protocol::RunStartedEvent>(e.body); });
    if (started) batch->attempts = readAttempts();
    emit batchReady(std::move(batch));
  }
  if (!lines.isEmpty()) emit logLines(lines);
  lines.clear();
}

void RunFollower::poll() {
  s_->continuation_queued = false;
  if (!s_->running || cancel_.load(std::memory_order_relaxed)) return;
  std::vector<FollowIssue> issues;
  QList<RankLogLine> lines;
  const bool more = s_->events->poll(&issues);
  const bool newEvents = more || s_->events->hasPending() || !issues.empty();
  if (s_->logs && (newEvents || ++s_->polls_since_logs >= options_.log_poll_every)) {
    s_->polls_since_logs = 0;
    s_->logs->poll(&lines, &issues);
  }
  pace(newEvents || !lines.isEmpty() || !issues.empty());
  emitPending(issues, lines, !more);
  if (more) {
    // A backlog: the next chunk right after whatever is queued (a stop(), say).
    if (!s_->continuation_queued) {
      s_->continuation_queued = true;
      QMetaObject::invokeMethod(this, &RunFollower::poll, Qt::QueuedConnection);
    }
    return;
  }
  if (options_.process_check_interval_ms > 0 && options_.process_alive &&
      s_->since_process_check.elapsed() >= options_.process_check_interval_ms) {
    s_->since_process_check.restart();
    checkProcess();
  }
}

int RunFollower::nextPollIntervalMs(int current, int base, int idleMax, int idlePolls, bool sawNew) {
  if (sawNew || idleMax <= base) return base;
  if (idlePolls < kIdlePollsBeforeBackoff) return current;
  return std::min(idleMax, std::max(current, 1) * 2);
}

void RunFollower::pace(bool sawNew) {
  s_->idle_polls = sawNew ? 0 : s_->idle_polls + 1;
  const int next = nextPollIntervalMs(interval_ms_, options_.poll_interval_ms, options_.idle_poll_interval_ms,
                                      s_->idle_polls, sawNew);
  if (next == interval_ms_) return;
  interval_ms_ = next;
  if (timer_ != nullptr && timer_->isActive()) timer_->setInterval(next);
}

std::optional<protocol::RunManifest> RunFollower::readManifest() {
  // run.json is replaced whole (rename) at every change: read what the path names now.
  if (!s_->manifest) s_->manifest = s_->dir->open(std::string(protocol::kManifestFileName));
  s_->manifest->reopen();
  auto text = readWhole(*s_->manifest, kMaxManifestBytes);
  if (!text.isOk()) return std::nullopt;  // no run.json (yet), or unreadable
  auto manifest = protocol::decodeManifest(text.value(), s_->manifest->describe());
  if (!manifest.isOk()) return std::nullopt;
  return std::move(manifest).value();
}

std::optional<std::vector<protocol::RunAttempt>> RunFollower::readAttempts() {
  auto m = readManifest();
  if (!m) return std::nullopt;
  return std::move(m->attempts);
}

void RunFollower::checkProcess() {
  const std::optional<protocol::RunManifest> manifest = readManifest();
  if (!manifest) return;  // nothing to check against
  const protocol::RunManifest& m = *manifest;
  if (!m.pid || protocol::isTerminal(m.state) || s_->reported_pid == m.pid) return;
  const std::optional<bool> alive = options_.process_alive(m);
  if (!alive || *alive) return;
  // The process is gone: whatever it wrote is complete now. Deliver it first, so the
  // owner judges the exit knowing the run's last events (a run_finished, say).
  std::vector<FollowIssue> issues;
  QList<RankLogLine> lines;
  s_->events->drain(&issues);
  if (s_->logs) s_->logs->poll(&lines, &issues);
  emitPending(issues, lines, true);
  s_->reported_pid = m.pid;
  emit processExited(*m.pid,
                     QStringLiteral("rank 0 (process %1) is no longer running, but run.json still says "
                                    "the run is '%2'")
                         .arg(*m.pid)
                         .arg(QString::fromStdString(std::string(protocol::toString(m.state)))));
}

}  // namespace fs::app
