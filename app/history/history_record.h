// What the run history holds about one run, and how it is asked for.
//
// RunRecord is one row of the history database (history_store.h) as plain
// values; HistoryQuery / HistoryPage are a listing request and its answer;
// the Live* structs are what a live monitor reports while a run goes on.
// Times are unix milliseconds, 0 meaning "not known" (or "not ended yet").
//
// Thread-safety: plain values.
#pragma once

#include <QList>
#include <QMap>
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QtGlobal>

namespace fs::app {

// One checkpoint a run wrote (the `checkpoint` event).
struct CheckpointEntry {
  QString path;  // relative to the run directory when inside it
  qint64 step = 0;
  int epoch = 0;
  QString kind;  // epoch | step | final
  qint64 bytes = 0;
  qint64 timeMs = 0;  // when the event was written; 0 when not known
  bool operator==(const CheckpointEntry&) const = default;
};

// Status values a record takes: a run.json / `state` value (starting,
// running, paused, stopping), or the end of the run: finished (run_finished
// ok), stopped (run_finished stopped) or failed.
struct RunRecord {
  QString runId;     // the key: run.json run_id, "<run_id>~<hex>" for another run under a taken id
                     // (NOTE [History run id collisions] in history_store.cpp)
  QString name;      // the run directory's name
  QString runDir;    // absolute on the machine it lives on
  QString location;  // the SSH destination runDir is reached through; empty: this machine
  QString host;      // hosts in node-rank order, joined with ", " (run.json / run_started)
  QString configYaml;
  QString configHash;  // "sha256:<hex>" of configYaml (history_store.h); empty without a config
  QString status;
  QString engineVersion;
  QString error;  // the run's error message, when it failed with one
  qint64 startedMs = 0;
  qint64 endedMs = 0;
  qint64 totalSteps = 0;
  qint64 lastStep = 0;
  int rollbacks = 0;                   // the loss-spike guard's `rollback` events
  QMap<QString, double> finalLosses;   // dataset -> last loss (run_finished's, else the last step's)
  QList<CheckpointEntry> checkpoints;  // in the order they were written
  bool operator==(const RunRecord&) const = default;

  // "location:runDir" for a remote run, runDir for a local one (listings, messages).
  QString where() const { return location.isEmpty() ? runDir : location + QLatin1Char(':') + runDir; }
  // Milliseconds from start to end; -1 while either is not known.
  qint64 durationMs() const { return startedMs > 0 && endedMs >= startedMs ? endedMs - startedMs : -1; }
};

// Columns a listing can be sorted by. Mapped to SQL by the store from a fixed
// table, never from text.
enum class HistorySort { kStarted, kName, kStatus, kDuration, kSteps, kRunDir, kHost, kRunId };

struct HistoryQuery {
  // Words separated by spaces; a run matches when every word occurs
  // (case-insensitively for ASCII) in its name, run id, status, host or run
  // directory as listed (location:runDir for a remote run). Empty: every run.
  QString search;
  HistorySort sort = HistorySort::kStarted;
  Qt::SortOrder order = Qt::DescendingOrder;
  int limit = 1000;       // rows at most; <= 0 means no limit
  int offset = 0;         // rows skipped first (paging)
  quint64 requestId = 0;  // echoed in the page, so a caller can drop stale answers
};

struct HistoryPage {
  HistoryQuery query;     // as asked
  QList<RunRecord> runs;  // without configYaml (find() gives it), with checkpoints
  int total = 0;          // runs matching the search, all pages together
  QString error;          // the query failed; runs is then empty
};

// ---- live updates: what a monitor knows while the run goes on ---------------------

struct LiveRunStarted {
  QString runId;
  QString name;
  QString runDir;
  QString location;  // as RunRecord::location
  QStringList hosts;
  QString configYaml;
  QString engineVersion;
  qint64 totalSteps = 0;
  qint64 startedMs = 0;
};

struct LiveStepProgress {
  QString runId;
  qint64 step = 0;
  QMap<QString, double> losses;  // this step's, per dataset
  int rollbacks = 0;             // `rollback` events seen so far (the store keeps the maximum)
};

struct LiveCheckpoint {
  QString runId;
  CheckpointEntry checkpoint;
};

struct LiveRunFinished {
  QString runId;
  QString status;  // finished | stopped | failed
  qint64 steps = 0;
  QMap<QString, double> finalLosses;  // empty: keep the last step's
  qint64 endedMs = 0;
  QString error;  // why it failed, when it did
};

}  // namespace fs::app

Q_DECLARE_METATYPE(fs::app::RunRecord)
Q_DECLARE_METATYPE(fs::app::HistoryQuery)
Q_DECLARE_METATYPE(fs::app::HistoryPage)
Q_DECLARE_METATYPE(fs::app::LiveRunStarted)
Q_DECLARE_METATYPE(fs::app::LiveStepProgress)
Q_DECLARE_METATYPE(fs::app::LiveCheckpoint)
Q_DECLARE_METATYPE(fs::app::LiveRunFinished)
