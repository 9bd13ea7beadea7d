// Reads a run directory into a history record: run.json, config.yaml, and a
// scan of events.jsonl for run_started / step / checkpoint / state /
// run_finished / error. The directory is a RunDirSource (app/monitor/
// byte_source.h): one of this machine (LocalRunDir) or one on a remote::Host
// (HostRunDir, SFTP over SSH); the same code reads both.
//
// The event scan streams the file in chunks through the protocol decoder, so
// a multi-gigabyte events.jsonl costs one chunk of memory; it reports
// progress after each chunk and stops at the next chunk when cancelled.
// Lines that do not decode are counted and the first one's message kept; the
// rest of the file is still read.
//
// What the record says when sources disagree: events are authoritative
// (run.json is only rewritten on state changes). A resumed run (several
// run_started) keeps its first start time and its last attempt's outcome.
//
// Thread-safety: reentrant; touches the disk or the network, so call it on a
// worker thread. The source is used by the calling thread only, for the call.
#pragma once

#include <QString>
#include <atomic>
#include <functional>

#include "app/history/history_record.h"
#include "app/monitor/byte_source.h"
#include "backend/protocol/status.h"
#include "backend/protocol/wire/events.h"

namespace fs::app {

struct RunDirImport {
  RunRecord record;
  int badLines = 0;        // events.jsonl lines that did not decode
  QString firstBadLine;    // the first one's message ("events.jsonl line 12 ...")
  bool hasEvents = false;  // events.jsonl existed
  bool cancelled = false;  // stopped early: the record is partial and must not be stored
};

struct RunDirReadOptions {
  qint64 chunkBytes = 1 << 20;
  // Called after each chunk with bytes read so far and the file's size.
  std::function<void(qint64 done, qint64 total)> progress;
  const std::atomic<bool>* cancel = nullptr;  // polled between chunks; may be null
};

// Reads `source`, a run directory whose path (absolute where it lives) is
// `runDir`: the record's runDir, and its name is runDir's last component; its
// location is left empty for the caller to set. NotFound naming run.json
// (source.describe(), so host:path for a remote one) when the directory holds
// no run, the manifest's own message when it is unreadable, IOError naming the
// file when config.yaml or events.jsonl exist but cannot be read. A missing
// config.yaml or events.jsonl is fine (a run that has just been created).
protocol::StatusOr<RunDirImport> readRunDirectory(RunDirSource& source, const QString& runDir,
                                                  const RunDirReadOptions& options = {});
// A directory of this machine (made absolute), read through a LocalRunDir.
protocol::StatusOr<RunDirImport> readRunDirectory(const QString& runDir,
                                                  const RunDirReadOptions& options = {});

// The record status for a run_finished status: finished, stopped or failed.
QString historyStatus(protocol::FinishStatus status);

}  // namespace fs::app
