// Small helpers for QtSql calls that report failures as protocol::Status.
//
// Thread-safety: act only on the objects passed in.
#pragma once

#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QString>
#include <initializer_list>

#include "backend/protocol/status.h"

namespace fs::app {

// "<where>: <what>: <driver message>" as an IOError.
inline protocol::Status sqlError(const QString& where, const QString& what, const QSqlError& error) {
  return protocol::Status::ioError(QStringLiteral("%1: %2: %3").arg(where, what, error.text()).toStdString());
}

// Runs one statement without bound values.
inline protocol::Status execSql(QSqlDatabase& db, const QString& where, const QString& sql) {
  QSqlQuery q(db);
  if (!q.exec(sql)) return sqlError(where, sql.simplified().left(80), q.lastError());
  return protocol::Status::ok();
}

// Rolls back unless commit() was called, so an early return never leaves a
// transaction open on the connection.
class SqlTransaction {
 public:
  explicit SqlTransaction(QSqlDatabase& db) : db_(db) {}
  ~SqlTransaction() {
    if (active_) execSql(db_, QString(), QStringLiteral("ROLLBACK"));
  }
  SqlTransaction(const SqlTransaction&) = delete;
  SqlTransaction& operator=(const SqlTransaction&) = delete;

  // BEGIN IMMEDIATE: takes the write lock now, so a second writer (another
  // app instance) waits here under busy_timeout instead of failing at commit.
  protocol::Status begin(const QString& where) {
    protocol::Status s = execSql(db_, where, QStringLiteral("BEGIN IMMEDIATE"));
    active_ = s.isOk();
    return s;
  }
  protocol::Status commit(const QString& where) {
    protocol::Status s = execSql(db_, where, QStringLiteral("COMMIT"));
    if (s.isOk()) active_ = false;
    return s;
  }

 private:
  QSqlDatabase& db_;
  bool active_ = false;
};

}  // namespace fs::app
