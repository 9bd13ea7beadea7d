// HistoryStore: every run ever seen, in one SQLite file.
//
// See NOTE [History store rows] and NOTE [History crash safety] in
// history_store.cpp.
//
// Thread-safety: none. QtSql connections belong to the thread that opened
// them: construct, open, use and destroy a store on one thread (HistoryWorker
// does this on its worker thread). Ownership: owns its connection.
#pragma once

#include <QHash>
#include <QString>
#include <QStringList>

class QSqlDatabase;

#include "app/history/history_record.h"
#include "backend/protocol/status.h"

namespace fs::app {

// <user data dir>/history.sqlite (app/common/user_dirs.h).
QString defaultHistoryPath();

// "sha256:<hex>" of the UTF-8 text; empty for empty text.
QString configHash(const QString& configYaml);

class HistoryStore {
 public:
  HistoryStore();
  ~HistoryStore();
  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;

  // Opens (creating the file and its folder when needed) and migrates to the
  // current schema. Closes a database opened before.
  protocol::Status open(const QString& path);
  void close();
  bool isOpen() const;
  QString path() const { return path_; }

  // Inserts the record or replaces every field of the row of the same run
  // (same run id and run directory), checkpoints included; another run
  // directory under a run id already recorded gets a row of its own (NOTE
  // [History run id collisions]). `key`, when given, is set to the row's key
  // (RunRecord::runId as find() and query() give it).
  // REQUIRES: isOpen(), !record.runId.isEmpty().
  protocol::Status upsert(const RunRecord& record, QString* key = nullptr);

  // Live updates. recordStarted creates the row (or restarts it: a resumed
  // run), keyed as upsert keys; the others go to the row recordStarted chose
  // for their run id, need it to exist and return NotFound otherwise.
  protocol::Status recordStarted(const LiveRunStarted& started, QString* key = nullptr);
  protocol::Status recordProgress(const LiveStepProgress& progress);
  protocol::Status recordCheckpoint(const LiveCheckpoint& checkpoint);
  protocol::Status recordFinished(const LiveRunFinished& finished);

  // A page of runs matching query.search, sorted as asked (ties by run id).
  protocol::StatusOr<HistoryPage> query(const HistoryQuery& query);
  // The whole record; NotFound when there is no such run.
  protocol::StatusOr<RunRecord> find(const QString& runId);
  protocol::Status remove(const QString& runId);

 private:
  protocol::Status ensureOpen() const;
  // WAL, synchronous, foreign keys, then the schema migration.
  protocol::Status configure(QSqlDatabase& db) const;
  protocol::Status loadCheckpoints(RunRecord* record);

  QString connection_;  // unique per store
  QString path_;
  QHash<QString, QString> liveKeys_;  // run id of recordStarted -> the row key it chose
};

}  // namespace fs::app
