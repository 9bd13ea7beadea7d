// LiveHistoryFeed: a live run's decoded events, turned into the history's
// live updates (history_record.h), for a monitor to pass to HistoryWorker.
//
// run_started -> LiveRunStarted; step -> LiveStepProgress, at most one per
// `progressEveryMs` of event time (the events' own `t`, so a replayed file
// gives the same updates as a live one) — the last one held back is sent
// before any later update and by flush(); checkpoint -> LiveCheckpoint;
// run_finished, or a `state: failed` -> LiveRunFinished, carrying the first
// error message of the attempt. Events before the first run_started are
// ignored: without it the run id is not known.
//
// Folding a whole events.jsonl through the feed into a store gives the same
// row as readRunDirectory on that directory (live_feed_test checks it).
//
// Thread-safety: none; one feed per followed run, used on one thread.
#pragma once

#include <QList>
#include <QString>
#include <optional>
#include <variant>

#include "app/history/history_record.h"
#include "backend/protocol/wire/events.h"

namespace fs::app {

class HistoryWorker;

using LiveUpdate = std::variant<LiveRunStarted, LiveStepProgress, LiveCheckpoint, LiveRunFinished>;

class LiveHistoryFeed {
 public:
  // `name` is the run directory's name; `configYaml` the text of its config.yaml.
  LiveHistoryFeed(QString runDir, QString name, QString configYaml, qint64 progressEveryMs = 10'000);

  // The updates `event` calls for, in the order to record them (often none).
  QList<LiveUpdate> feed(const protocol::Event& event);
  // The step progress held back by the throttle, if any; call it when the
  // monitor stops following the run.
  std::optional<LiveStepProgress> flush();

  const QString& runId() const { return runId_; }

 private:
  void takePending(QList<LiveUpdate>* out);

  QString runDir_;
  QString name_;
  QString configYaml_;
  qint64 progressEveryMs_;
  QString runId_;
  QString error_;                            // first error of the current attempt
  int rollbacks_ = 0;                        // `rollback` events so far
  qint64 errorT_ = 0;                        // its event time
  std::optional<qint64> lastProgressT_;      // event time of the last progress sent
  std::optional<LiveStepProgress> pending_;  // held back by the throttle
  bool finished_ = false;                    // a LiveRunFinished went out for this attempt
};

// Queues `update` to the matching HistoryWorker slot (worker may live on another thread).
void postLiveUpdate(HistoryWorker* worker, const LiveUpdate& update);

}  // namespace fs::app
