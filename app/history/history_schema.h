// The history database's tables and the migrations between their versions.
//
// NOTE [History schema versions]
// The table `schema_version` holds one row: the version the tables are at.
// Each version is reached from the one before it by one migration step
// (SQL run in the same transaction as the version update), so a database
// written by any older build opens in a newer one with every row kept, and a
// crash mid-migration leaves the old version intact. A database at a newer
// version than this build knows is refused, never downgraded.
//   v1  runs(run_id, name, run_dir, host, config_yaml, config_hash, status,
//       started_ms, ended_ms, total_steps, last_step, final_losses)
//   v2  runs + engine_version, error; checkpoints(run_id -> runs, path, step,
//       epoch, kind, bytes, time_ms) with ON DELETE CASCADE
//   v3  runs + location (the SSH destination of a remote run; '' = this
//       machine, which every older row is)
//   v4  runs + rollbacks (the loss-spike guard's `rollback` events; 0 for
//       every older row: no older engine rolled back)
// To add a column: append a step to the list in history_schema.cpp, bump
// kHistorySchemaVersion, and add the column to the store's reads and writes.
//
// Thread-safety: functions act only on the connection passed in, which must
// belong to the calling thread (QtSql's rule).
#pragma once

#include <QSqlDatabase>
#include <QString>

#include "backend/protocol/status.h"

namespace fs::app {

inline constexpr int kHistorySchemaVersion = 4;

// The schema version of the open database; 0 when it has no tables yet.
protocol::StatusOr<int> readSchemaVersion(QSqlDatabase& db);

// Brings the open database to kHistorySchemaVersion in one transaction.
// `where` names the database in messages. Fails, changing nothing, when the
// database is newer than this build.
protocol::Status migrateHistorySchema(QSqlDatabase& db, const QString& where);

}  // namespace fs::app
