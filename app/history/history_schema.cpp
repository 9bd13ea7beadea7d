#include "app/history/history_schema.h"

#include <QSqlQuery>
#include <QStringList>

#include "app/history/sql_util.h"

namespace fs::app {
namespace {

// steps[i] takes a database from version i to version i + 1. Never edit a
// step once released: databases in the field went through it as it was.
const QList<QStringList>& migrationSteps() {
  static const QList<QStringList> steps = {
      // 0 -> 1: the first release.
      {
          QStringLiteral("CREATE TABLE schema_version (version INTEGER NOT NULL)"),
          QStringLiteral("INSERT INTO schema_version (version) VALUES (0)"),
          QStringLiteral("CREATE TABLE runs ("
                         " run_id TEXT PRIMARY KEY NOT NULL,"
                         " name TEXT NOT NULL DEFAULT '',"
                         " run_dir TEXT NOT NULL DEFAULT '',"
                         " host TEXT NOT NULL DEFAULT '',"
                         " config_yaml TEXT NOT NULL DEFAULT '',"
                         " config_hash TEXT NOT NULL DEFAULT '',"
                         " status TEXT NOT NULL DEFAULT '',"
                         " started_ms INTEGER NOT NULL DEFAULT 0,"
                         " ended_ms INTEGER NOT NULL DEFAULT 0,"
                         " total_steps INTEGER NOT NULL DEFAULT 0,"
                         " last_step INTEGER NOT NULL DEFAULT 0,"
                         " final_losses TEXT NOT NULL DEFAULT '{}')"),
          QStringLiteral("CREATE INDEX runs_started ON runs (started_ms)"),
          QStringLiteral("CREATE INDEX runs_run_dir ON runs (run_dir)"),
      },
      // 1 -> 2: engine version, the failure message, checkpoints as rows.
      {
          QStringLiteral("ALTER TABLE runs ADD COLUMN engine_version TEXT NOT NULL DEFAULT ''"),
          QStringLiteral("ALTER TABLE runs ADD COLUMN error TEXT NOT NULL DEFAULT ''"),
          QStringLiteral("CREATE TABLE checkpoints ("
                         " run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,"
                         " path TEXT NOT NULL,"
                         " step INTEGER NOT NULL DEFAULT 0,"
                         " epoch INTEGER NOT NULL DEFAULT 0,"
                         " kind TEXT NOT NULL DEFAULT '',"
                         " bytes INTEGER NOT NULL DEFAULT 0,"
                         " time_ms INTEGER NOT NULL DEFAULT 0,"
                         " seq INTEGER NOT NULL DEFAULT 0,"
                         " PRIMARY KEY (run_id, path))"),
      },
      // 2 -> 3: where a remote run lives; rows of older builds are all local.
      {
          QStringLiteral("ALTER TABLE runs ADD COLUMN location TEXT NOT NULL DEFAULT ''"),
      },
      // 3 -> 4: the loss-spike guard's rollbacks; older runs had none.
      {
          QStringLiteral("ALTER TABLE runs ADD COLUMN rollbacks INTEGER NOT NULL DEFAULT 0"),
      },
  };
  return steps;
}

}  // namespace

protocol::StatusOr<int> readSchemaVersion(QSqlDatabase& db) {
  const QString where = db.databaseName();
  QSqlQuery q(db);
  if (!q.exec(QStringLiteral(
          "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'")) ||
      !q.next()) {
    return sqlError(where, QStringLiteral("reading the table list"), q.lastError());
  }
  if (q.value(0).toInt() == 0) return 0;
  if (!q.exec(QStringLiteral("SELECT version FROM schema_version")) || !q.next()) {
    return protocol::Status::corruption(
        QStringLiteral("%1: table schema_version has no row; not a Flamingo Studio history database?")
            .arg(where)
            .toStdString());
  }
  return q.value(0).toInt();
}

protocol::Status migrateHistorySchema(QSqlDatabase& db, const QString& where) {
  SqlTransaction tx(db);
  if (protocol::Status s = tx.begin(where); !s) return s;
  // Read inside the write transaction: two instances opening a fresh file at
  // once must not both run step 0 -> 1.
  auto version = readSchemaVersion(db);
  if (!version.isOk()) return version.status();
  const int from = version.value();
  if (from > kHistorySchemaVersion) {
    return protocol::Status::unsupported(
        QStringLiteral(
            "%1: history database schema version %2 is newer than this build (%3); update Flamingo Studio")
            .arg(where)
            .arg(from)
            .arg(kHistorySchemaVersion)
            .toStdString());
  }
  if (from == kHistorySchemaVersion) return protocol::Status::ok();  // rolls back an empty transaction
  const auto& steps = migrationSteps();
  Q_ASSERT(steps.size() == kHistorySchemaVersion);
  for (int v = from; v < kHistorySchemaVersion; ++v) {
    for (const QString& sql : steps[v]) {
      if (protocol::Status s =
              execSql(db, QStringLiteral("%1: migrating to version %2").arg(where).arg(v + 1), sql);
          !s)
        return s;
    }
  }
  QSqlQuery q(db);
  q.prepare(QStringLiteral("UPDATE schema_version SET version = ?"));
  q.addBindValue(kHistorySchemaVersion);
  if (!q.exec()) return sqlError(where, QStringLiteral("setting the schema version"), q.lastError());
  return tx.commit(where);
}

}  // namespace fs::app
