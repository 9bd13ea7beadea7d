#include "app/history/live_feed.h"

#include <QMetaObject>

#include "app/history/history_worker.h"
#include "app/history/run_dir_reader.h"

namespace fs::app {
namespace {

QString fromStd(const std::string& s) {
  return QString::fromStdString(s);
}

QMap<QString, double> toLosses(const std::map<std::string, double>& m) {
  QMap<QString, double> out;
  for (const auto& [k, v] : m) out.insert(fromStd(k), v);
  return out;
}

}  // namespace

LiveHistoryFeed::LiveHistoryFeed(QString runDir, QString name, QString configYaml, qint64 progressEveryMs)
    : runDir_(std::move(runDir)),
      name_(std::move(name)),
      configYaml_(std::move(configYaml)),
      progressEveryMs_(progressEveryMs) {}

void LiveHistoryFeed::takePending(QList<LiveUpdate>* out) {
  if (pending_) out->append(*pending_);
  pending_.reset();
}

std::optional<LiveStepProgress> LiveHistoryFeed::flush() {
  std::optional<LiveStepProgress> p = pending_;
  pending_.reset();
  return p;
}

QList<LiveUpdate> LiveHistoryFeed::feed(const protocol::Event& event) {
  QList<LiveUpdate> out;
  if (const auto* started = std::get_if<protocol::RunStartedEvent>(&event.body)) {
    takePending(&out);  // a previous attempt's last step still counts
    runId_ = fromStd(started->run_id);
    error_.clear();
    finished_ = false;
    LiveRunStarted s;
    s.runId = runId_;
    s.name = name_;
    s.runDir = runDir_;
    for (const auto& h : started->hosts) s.hosts << fromStd(h);
    s.configYaml = configYaml_;
    s.engineVersion = fromStd(started->engine_version);
    s.totalSteps = started->total_steps;
    s.startedMs = event.t;
    out.append(s);
    return out;
  }
  if (runId_.isEmpty()) return out;  // no run_started yet: the run id is not known

  if (const auto* step = std::get_if<protocol::StepEvent>(&event.body)) {
    LiveStepProgress p{runId_, step->step, toLosses(step->loss), rollbacks_};
    if (pending_ && p.losses.isEmpty()) p.losses = pending_->losses;  // keep the last known losses
    if (!lastProgressT_ || event.t - *lastProgressT_ >= progressEveryMs_) {
      pending_.reset();
      lastProgressT_ = event.t;
      out.append(p);
    } else {
      pending_ = p;
    }
  } else if (std::holds_alternative<protocol::RollbackEvent>(event.body)) {
    ++rollbacks_;  // carried by the next progress update
  } else if (const auto* c = std::get_if<protocol::CheckpointEvent>(&event.body)) {
    takePending(&out);
    LiveCheckpoint lc;
    lc.runId = runId_;
    lc.checkpoint = {fromStd(c->path), c->step, c->epoch, fromStd(std::string(protocol::toString(c->kind))),
                     c->bytes,         event.t};
    out.append(lc);
  } else if (const auto* e = std::get_if<protocol::ErrorEvent>(&event.body)) {
    if (error_.isEmpty()) {
      error_ = fromStd(e->message);  // the first error is the cause; later ones follow from it
      errorT_ = event.t;
    }
  } else if (const auto* st = std::get_if<protocol::StateEvent>(&event.body)) {
    // A failure without run_finished (the engine may die before writing it).
    if (st->state == protocol::RunState::kFailed && !finished_) {
      takePending(&out);
      finished_ = true;
      out.append(LiveRunFinished{
          runId_, QStringLiteral("failed"), 0, {}, error_.isEmpty() ? event.t : errorT_, error_});
    }
  } else if (const auto* f = std::get_if<protocol::RunFinishedEvent>(&event.body)) {
    takePending(&out);
    finished_ = true;
    out.append(LiveRunFinished{runId_, historyStatus(f->status), f->steps, toLosses(f->final_loss), event.t,
                               error_});
  }
  return out;
}

void postLiveUpdate(HistoryWorker* worker, const LiveUpdate& update) {
  std::visit(
      [worker](const auto& u) {
        using U = std::decay_t<decltype(u)>;
        QMetaObject::invokeMethod(
            worker,
            [worker, u] {
              if constexpr (std::is_same_v<U, LiveRunStarted>)
                worker->recordStarted(u);
              else if constexpr (std::is_same_v<U, LiveStepProgress>)
                worker->recordProgress(u);
              else if constexpr (std::is_same_v<U, LiveCheckpoint>)
                worker->recordCheckpoint(u);
              else
                worker->recordFinished(u);
            },
            Qt::QueuedConnection);
      },
      update);
}

}  // namespace fs::app
