#include "app/history/history_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QVariant>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "app/common/user_dirs.h"
#include "app/history/history_schema.h"
#include "app/history/sql_util.h"

// NOTE [History store rows]
// One row per run id (history_record.h). Rows come in three ways: from a run
// directory on disk (readRunDirectory, then upsert), from a live monitor's
// reports (recordStarted / Progress / Checkpoint / Finished), or as a whole
// record. Listings filter and sort in SQL (query()).
//
// NOTE [History crash safety]
// The file runs in WAL journal mode with synchronous=NORMAL and foreign keys
// on. Every write is one transaction (BEGIN IMMEDIATE ... COMMIT), so an app
// killed at any instant leaves a database that reopens consistent with every
// transaction that returned OK; a power loss may lose the last few commits
// but never corrupts the file. Several processes may share the file
// (busy_timeout waits for the write lock). Opening migrates older schema
// versions in place (history_schema.h).
//
// NOTE [History file mode]
// Rows hold each run's config.yaml, whose pipe: commands may carry a
// credential, so the database is the owner's only: open() creates the file
// with mode 0600 before SQLite opens it (SQLite gives its -wal and -shm files
// the database's mode) and takes group and other access away from a file, -wal
// or -shm an older build created 0644.
//
// NOTE [History run id collisions]
// The key is run.json's run_id, which the engine makes from the run name, the
// second and 16 random bits, but which anyone who can write a run directory
// can set (a remote launch.json or run.json is theirs to edit), and which a
// copied run directory keeps. A row is the same run when it has the same
// directory (location, run_dir: a resumed run, a re-import) or the same start
// time and config text (the directory copied elsewhere: its row moves there).
// Any other run under a taken key never replaces the row: it is keyed
// "<run_id>~<8 hex of SHA-256 of location and run_dir>" (then "-2", "-3" ...
// should that be taken too), so both runs stay listed.
// Live updates after recordStarted go to the row recordStarted chose
// (liveKeys_); two live runs of one store under one run id at once share the
// later one's row for those.

namespace fs::app {
namespace {

using protocol::Status;

// Losses as a JSON object. JSON has no NaN or infinity; like events.jsonl
// (docs/telemetry.md) they are written as the strings "nan", "inf", "-inf".
QString lossesToJson(const QMap<QString, double>& losses) {
  QJsonObject o;
  for (auto it = losses.begin(); it != losses.end(); ++it) {
    const double v = it.value();
    if (std::isnan(v))
      o.insert(it.key(), QStringLiteral("nan"));
    else if (std::isinf(v))
      o.insert(it.key(), v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf"));
    else
      o.insert(it.key(), v);
  }
  return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

QMap<QString, double> lossesFromJson(const QString& text) {
  QMap<QString, double> losses;
  const QJsonObject o = QJsonDocument::fromJson(text.toUtf8()).object();
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (it.value().isDouble()) {
      losses.insert(it.key(), it.value().toDouble());
    } else {
      const QString s = it.value().toString().toLower();
      losses.insert(it.key(), s == QLatin1String("inf")    ? HUGE_VAL
                              : s == QLatin1String("-inf") ? -HUGE_VAL
                                                           : std::nan(""));
    }
  }
  return losses;
}

// The run directory as listed: location:run_dir for a remote run (RunRecord::where()).
constexpr const char* kListedRunDir =
    "(CASE WHEN location = '' THEN run_dir ELSE location || ':' || run_dir END)";

// Columns of a listing row; find() adds config_yaml at the end.
constexpr const char* kRowColumns =
    "run_id, name, run_dir, host, config_hash, status, engine_version, error, started_ms, ended_ms, "
    "total_steps, last_step, final_losses, location, rollbacks";

RunRecord readRow(const QSqlQuery& q) {
  RunRecord r;
  r.runId = q.value(0).toString();
  r.name = q.value(1).toString();
  r.runDir = q.value(2).toString();
  r.host = q.value(3).toString();
  r.configHash = q.value(4).toString();
  r.status = q.value(5).toString();
  r.engineVersion = q.value(6).toString();
  r.error = q.value(7).toString();
  r.startedMs = q.value(8).toLongLong();
  r.endedMs = q.value(9).toLongLong();
  r.totalSteps = q.value(10).toLongLong();
  r.lastStep = q.value(11).toLongLong();
  r.finalLosses = lossesFromJson(q.value(12).toString());
  r.location = q.value(13).toString();
  r.rollbacks = q.value(14).toInt();
  return r;
}

// A checkpoints row whose path is column `first` (then step, epoch, kind, bytes, time_ms).
CheckpointEntry readCheckpoint(const QSqlQuery& q, int first) {
  CheckpointEntry c;
  c.path = q.value(first).toString();
  c.step = q.value(first + 1).toLongLong();
  c.epoch = q.value(first + 2).toInt();
  c.kind = q.value(first + 3).toString();
  c.bytes = q.value(first + 4).toLongLong();
  c.timeMs = q.value(first + 5).toLongLong();
  return c;
}

QString sortExpression(HistorySort sort) {
  switch (sort) {
    case HistorySort::kStarted:
      return QStringLiteral("started_ms");
    case HistorySort::kName:
      return QStringLiteral("name COLLATE NOCASE");
    case HistorySort::kStatus:
      return QStringLiteral("status");
    case HistorySort::kDuration:
      return QStringLiteral(
          "CASE WHEN started_ms > 0 AND ended_ms >= started_ms THEN ended_ms - started_ms ELSE -1 END");
    case HistorySort::kSteps:
      return QStringLiteral("last_step");
    case HistorySort::kRunDir:
      return QLatin1String(kListedRunDir);
    case HistorySort::kHost:
      return QStringLiteral("host COLLATE NOCASE");
    case HistorySort::kRunId:
      return QStringLiteral("run_id");
  }
  return QStringLiteral("started_ms");
}

// A LIKE pattern matching `word` anywhere, with the wildcards in it escaped.
QString containsPattern(QString word) {
  word.replace(QLatin1Char('\\'), QStringLiteral("\\\\"));
  word.replace(QLatin1Char('%'), QStringLiteral("\\%"));
  word.replace(QLatin1Char('_'), QStringLiteral("\\_"));
  return QLatin1Char('%') + word + QLatin1Char('%');
}

// " WHERE (...) AND (...)" for the search words, and the values to bind.
QString searchClause(const QString& search, QStringList* binds) {
  static const QStringList kColumns = {QStringLiteral("name"), QStringLiteral("run_id"),
                                       QStringLiteral("status"), QStringLiteral("host"),
                                       QLatin1String(kListedRunDir)};
  QStringList terms;
  for (const QString& word : search.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    QStringList ors;
    for (const QString& column : kColumns) {
      ors << column + QStringLiteral(" LIKE ? ESCAPE '\\'");
      binds->append(containsPattern(word));
    }
    terms << QLatin1Char('(') + ors.join(QStringLiteral(" OR ")) + QLatin1Char(')');
  }
  return terms.isEmpty() ? QString() : QStringLiteral(" WHERE ") + terms.join(QStringLiteral(" AND "));
}

// Binds in order. A null QString would bind as SQL NULL, which the NOT NULL
// text columns refuse: it goes in as ''.
void bindAll(QSqlQuery& q, std::initializer_list<QVariant> values) {
  for (const QVariant& v : values) {
    if (v.typeId() == QMetaType::QString && v.toString().isNull())
      q.addBindValue(QStringLiteral(""));
    else
      q.addBindValue(v);
  }
}

Status insertCheckpoint(QSqlDatabase& db, const QString& where, const QString& runId,
                        const CheckpointEntry& c, qint64 seq) {
  QSqlQuery q(db);
  q.prepare(
      QStringLiteral("INSERT INTO checkpoints (run_id, path, step, epoch, kind, bytes, time_ms, seq) VALUES "
                     "(?, ?, ?, ?, ?, ?, ?, ?)"
                     " ON CONFLICT (run_id, path) DO UPDATE SET step = excluded.step, epoch = excluded.epoch,"
                     " kind = excluded.kind, bytes = excluded.bytes, time_ms = excluded.time_ms"));
  bindAll(q, {QVariant(runId), QVariant(c.path), QVariant(c.step), QVariant(c.epoch), QVariant(c.kind),
              QVariant(c.bytes), QVariant(c.timeMs), QVariant(seq)});
  if (!q.exec())
    return sqlError(where, QStringLiteral("recording checkpoint %1 of run %2").arg(c.path, runId),
                    q.lastError());
  return Status::ok();
}

// The key for run `runId` of (location, runDir): see NOTE [History run id collisions].
protocol::StatusOr<QString> rowKey(QSqlDatabase& db, const QString& where, const QString& runId,
                                   const QString& location, const QString& runDir, qint64 startedMs,
                                   const QString& configYaml) {
  const QString suffix =
      QLatin1Char('~') +
      QString::fromLatin1(QCryptographicHash::hash((location + QLatin1Char('\n') + runDir).toUtf8(),
                                                   QCryptographicHash::Sha256)
                              .toHex()
                              .left(8));
  for (int n = 0; n < 100; ++n) {
    const QString key = n == 0   ? runId
                        : n == 1 ? runId + suffix
                                 : runId + suffix + QStringLiteral("-%1").arg(n);
    QSqlQuery q(db);
    q.prepare(QStringLiteral("SELECT location, run_dir, started_ms, config_yaml FROM runs WHERE run_id = ?"));
    q.addBindValue(key);
    if (!q.exec()) return sqlError(where, QStringLiteral("looking up run %1").arg(key), q.lastError());
    if (!q.next()) return key;
    const bool sameDir = q.value(0).toString() == location && q.value(1).toString() == runDir;
    const bool copy =
        startedMs > 0 && q.value(2).toLongLong() == startedMs && q.value(3).toString() == configYaml;
    if (sameDir || copy) return key;
  }
  return Status::invalidArgument(
      QStringLiteral("%1: run id %2 is taken by 100 other run directories; not recording %3")
          .arg(where, runId, location.isEmpty() ? runDir : location + QLatin1Char(':') + runDir)
          .toStdString());
}

// See NOTE [History file mode].
Status restrictToOwner(const QString& path) {
  const QByteArray file = QFile::encodeName(path);
  const int fd = ::open(file.constData(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
  } else if (errno != EEXIST) {
    return Status::ioError(QStringLiteral("%1: cannot create: %2")
                               .arg(path, QString::fromLocal8Bit(std::strerror(errno)))
                               .toStdString());
  }
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const QByteArray name = file + suffix;
    struct stat st {};
    if (::stat(name.constData(), &st) != 0 || (st.st_mode & 077) == 0) continue;
    if (::chmod(name.constData(), st.st_mode & 0700) != 0) {
      return Status::ioError(QStringLiteral("%1: cannot take group and other access away: %2")
                                 .arg(QFile::decodeName(name), QString::fromLocal8Bit(std::strerror(errno)))
                                 .toStdString());
    }
  }
  return Status::ok();
}

std::atomic<int> nextConnection{0};

}  // namespace

QString defaultHistoryPath() {
  return userDataDir() + QStringLiteral("/history.sqlite");
}

QString configHash(const QString& configYaml) {
  if (configYaml.isEmpty()) return QString();
  return QStringLiteral("sha256:") +
         QString::fromLatin1(
             QCryptographicHash::hash(configYaml.toUtf8(), QCryptographicHash::Sha256).toHex());
}

HistoryStore::HistoryStore() : connection_(QStringLiteral("fs-history-%1").arg(nextConnection++)) {}

HistoryStore::~HistoryStore() {
  close();
}

Status HistoryStore::open(const QString& path) {
  close();
  const QFileInfo info(path);
  if (!QDir().mkpath(info.absolutePath())) {
    return Status::ioError(
        QStringLiteral("%1: cannot create the folder %2").arg(path, info.absolutePath()).toStdString());
  }
  if (Status s = restrictToOwner(path); !s) return s;
  QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection_);
  if (!db.isValid()) {
    db = QSqlDatabase();
    QSqlDatabase::removeDatabase(connection_);
    return Status::unsupported("the QSQLITE driver of Qt is not installed; the run history needs it");
  }
  path_ = path;
  db.setDatabaseName(path);
  db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=5000"));
  Status s = db.open() ? configure(db) : sqlError(path, QStringLiteral("cannot open"), db.lastError());
  if (s.isOk()) return s;
  db.close();
  db = QSqlDatabase();  // release our handle: close() removes the connection
  close();
  return s;
}

Status HistoryStore::configure(QSqlDatabase& db) const {
  QSqlQuery q(db);
  // The first statement that reads the file: a file that is not a database fails here.
  if (!q.exec(QStringLiteral("PRAGMA journal_mode = WAL")) || !q.next())
    return sqlError(path_, QStringLiteral("not a usable SQLite database"), q.lastError());
  if (q.value(0).toString().compare(QLatin1String("wal"), Qt::CaseInsensitive) != 0) {
    return Status::ioError(QStringLiteral("%1: cannot switch to WAL journal mode (got '%2')")
                               .arg(path_, q.value(0).toString())
                               .toStdString());
  }
  q.finish();
  for (const char* pragma : {"PRAGMA synchronous = NORMAL", "PRAGMA foreign_keys = ON"}) {
    if (Status s = execSql(db, path_, QString::fromLatin1(pragma)); !s) return s;
  }
  return migrateHistorySchema(db, path_);
}

void HistoryStore::close() {
  if (!QSqlDatabase::contains(connection_)) return;
  {
    QSqlDatabase db = QSqlDatabase::database(connection_, false);
    db.close();
  }  // every handle released before the connection is removed
  QSqlDatabase::removeDatabase(connection_);
}

bool HistoryStore::isOpen() const {
  return QSqlDatabase::contains(connection_) && QSqlDatabase::database(connection_, false).isOpen();
}

Status HistoryStore::ensureOpen() const {
  if (isOpen()) return Status::ok();
  return Status::invalidArgument("the history database is not open");
}

Status HistoryStore::upsert(const RunRecord& record, QString* keyOut) {
  if (Status s = ensureOpen(); !s) return s;
  if (record.runId.isEmpty())
    return Status::invalidArgument(QStringLiteral("%1: a run without a run id cannot be recorded (dir %2)")
                                       .arg(path_, record.runDir)
                                       .toStdString());
  QSqlDatabase db = QSqlDatabase::database(connection_, false);
  SqlTransaction tx(db);
  if (Status s = tx.begin(path_); !s) return s;
  auto key =
      rowKey(db, path_, record.runId, record.location, record.runDir, record.startedMs, record.configYaml);
  if (!key.isOk()) return key.status();
  RunRecord r = record;
  r.runId = key.value();
  QSqlQuery q(db);
  q.prepare(QStringLiteral(
      "INSERT INTO runs (run_id, name, run_dir, host, config_yaml, config_hash, status, engine_version, "
      "error,"
      " started_ms, ended_ms, total_steps, last_step, final_losses, location, rollbacks) VALUES (?, ?, ?, ?, "
      "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
      " ON CONFLICT (run_id) DO UPDATE SET name = excluded.name, run_dir = excluded.run_dir, host = "
      "excluded.host, location = excluded.location,"
      " config_yaml = excluded.config_yaml, config_hash = excluded.config_hash, status = excluded.status,"
      " engine_version = excluded.engine_version, error = excluded.error, started_ms = excluded.started_ms,"
      " ended_ms = excluded.ended_ms, total_steps = excluded.total_steps, last_step = excluded.last_step,"
      " final_losses = excluded.final_losses, rollbacks = excluded.rollbacks"));
  bindAll(q, {QVariant(r.runId), QVariant(r.name), QVariant(r.runDir), QVariant(r.host),
              QVariant(r.configYaml), QVariant(configHash(r.configYaml)), QVariant(r.status),
              QVariant(r.engineVersion), QVariant(r.error), QVariant(r.startedMs), QVariant(r.endedMs),
              QVariant(r.totalSteps), QVariant(r.lastStep), QVariant(lossesToJson(r.finalLosses)),
              QVariant(r.location), QVariant(r.rollbacks)});
  if (!q.exec()) return sqlError(path_, QStringLiteral("recording run %1").arg(r.runId), q.lastError());
  q.prepare(QStringLiteral("DELETE FROM checkpoints WHERE run_id = ?"));
  q.addBindValue(r.runId);
  if (!q.exec())
    return sqlError(path_, QStringLiteral("replacing checkpoints of run %1").arg(r.runId), q.lastError());
  for (qsizetype i = 0; i < r.checkpoints.size(); ++i) {
    if (Status s = insertCheckpoint(db, path_, r.runId, r.checkpoints[i], i); !s) return s;
  }
  if (Status s = tx.commit(path_); !s) return s;
  if (keyOut) *keyOut = r.runId;
  return Status::ok();
}

Status HistoryStore::recordStarted(const LiveRunStarted& started, QString* keyOut) {
  if (Status s = ensureOpen(); !s) return s;
  if (started.runId.isEmpty())
    return Status::invalidArgument(
        QStringLiteral("%1: run_started without a run id (dir %2)").arg(path_, started.runDir).toStdString());
  QSqlDatabase db = QSqlDatabase::database(connection_, false);
  SqlTransaction tx(db);
  if (Status s = tx.begin(path_); !s) return s;
  auto key = rowKey(db, path_, started.runId, started.location, started.runDir, started.startedMs,
                    started.configYaml);
  if (!key.isOk()) return key.status();
  LiveRunStarted st = started;
  st.runId = key.value();
  QSqlQuery q(db);
  // A resumed run starts again under the same id: it keeps its first start time.
  q.prepare(QStringLiteral(
      "INSERT INTO runs (run_id, name, run_dir, location, host, config_yaml, config_hash, status, "
      "engine_version, started_ms,"
      " total_steps) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)"
      " ON CONFLICT (run_id) DO UPDATE SET name = excluded.name, run_dir = excluded.run_dir,"
      " location = excluded.location, host = excluded.host,"
      " config_yaml = excluded.config_yaml, config_hash = excluded.config_hash, status = 'running',"
      " engine_version = excluded.engine_version, error = '', ended_ms = 0, total_steps = "
      "excluded.total_steps,"
      " started_ms = CASE WHEN runs.started_ms > 0 THEN runs.started_ms ELSE excluded.started_ms END"));
  bindAll(q, {QVariant(st.runId), QVariant(st.name), QVariant(st.runDir), QVariant(st.location),
              QVariant(st.hosts.join(QStringLiteral(", "))), QVariant(st.configYaml),
              QVariant(configHash(st.configYaml)), QVariant(st.engineVersion), QVariant(st.startedMs),
              QVariant(st.totalSteps)});
  if (!q.exec())
    return sqlError(path_, QStringLiteral("recording the start of run %1").arg(st.runId), q.lastError());
  if (Status s = tx.commit(path_); !s) return s;
  liveKeys_.insert(started.runId, st.runId);
  if (keyOut) *keyOut = st.runId;
  return Status::ok();
}

Status HistoryStore::recordProgress(const LiveStepProgress& progress) {
  LiveStepProgress p = progress;
  p.runId = liveKeys_.value(p.runId, p.runId);
  if (Status s = ensureOpen(); !s) return s;
  QSqlDatabase db = QSqlDatabase::database(connection_, false);
  SqlTransaction tx(db);
  if (Status s = tx.begin(path_); !s) return s;
  QSqlQuery q(db);
  q.prepare(QStringLiteral(
      "UPDATE runs SET last_step = max(last_step, ?), rollbacks = max(rollbacks, ?),"
      " final_losses = CASE WHEN ? THEN ? ELSE final_losses END,"
      " status = CASE WHEN status IN ('', 'starting') THEN 'running' ELSE status END WHERE run_id = ?"));
  q.addBindValue(p.step);
  q.addBindValue(p.rollbacks);
  q.addBindValue(!p.losses.isEmpty());
  q.addBindValue(lossesToJson(p.losses));
  q.addBindValue(p.runId);
  if (!q.exec())
    return sqlError(path_, QStringLiteral("recording step %1 of run %2").arg(p.step).arg(p.runId),
                    q.lastError());
  if (q.numRowsAffected() == 0)
    return Status::notFound(
        QStringLiteral("%1: no run %2 to record step %3 for").arg(path_, p.runId).arg(p.step).toStdString());
  return tx.commit(path_);
}

Status HistoryStore::recordCheckpoint(const LiveCheckpoint& checkpoint) {
  LiveCheckpoint c = checkpoint;
  c.runId = liveKeys_.value(c.runId, c.runId);
  if (Status s = ensureOpen(); !s) return s;
  QSqlDatabase db = QSqlDatabase::database(connection_, false);
  SqlTransaction tx(db);
  if (Status s = tx.begin(path_); !s) return s;
  QSqlQuery q(db);
  q.prepare(
      QStringLiteral("SELECT (SELECT count(*) FROM runs WHERE run_id = ?),"
                     " (SELECT coalesce(max(seq) + 1, 0) FROM checkpoints WHERE run_id = ?)"));
  q.addBindValue(c.runId);
  q.addBindValue(c.runId);
  if (!q.exec() || !q.next())
    return sqlError(path_, QStringLiteral("looking up run %1").arg(c.runId), q.lastError());
  if (q.value(0).toInt() == 0) {
    return Status::notFound(QStringLiteral("%1: no run %2 to record checkpoint %3 for")
                                .arg(path_, c.runId, c.checkpoint.path)
                                .toStdString());
  }
  const qint64 seq = q.value(1).toLongLong();
  q.finish();
  if (Status s = insertCheckpoint(db, path_, c.runId, c.checkpoint, seq); !s) return s;
  return tx.commit(path_);
}

Status HistoryStore::recordFinished(const LiveRunFinished& finished) {
  LiveRunFinished f = finished;
  f.runId = liveKeys_.value(f.runId, f.runId);
  if (Status s = ensureOpen(); !s) return s;
  QSqlDatabase db = QSqlDatabase::database(connection_, false);
  SqlTransaction tx(db);
  if (Status s = tx.begin(path_); !s) return s;
  QSqlQuery q(db);
  q.prepare(
      QStringLiteral("UPDATE runs SET status = ?, last_step = max(last_step, ?), ended_ms = ?, error = ?,"
                     " final_losses = CASE WHEN ? THEN ? ELSE final_losses END WHERE run_id = ?"));
  bindAll(q, {QVariant(f.status), QVariant(f.steps), QVariant(f.endedMs), QVariant(f.error),
              QVariant(!f.finalLosses.isEmpty()), QVariant(lossesToJson(f.finalLosses)), QVariant(f.runId)});
  if (!q.exec())
    return sqlError(path_, QStringLiteral("recording the end of run %1").arg(f.runId), q.lastError());
  if (q.numRowsAffected() == 0)
    return Status::notFound(
        QStringLiteral("%1: no run %2 to record its end for").arg(path_, f.runId).toStdString());
  return tx.commit(path_);
}

protocol::StatusOr<HistoryPage> HistoryStore::query(const HistoryQuery& request) {
  if (Status s = ensureOpen(); !s) return s;
  QSqlDatabase db = QSqlDatabase::database(connection_, false);
  HistoryPage page;
  page.query = request;
  QStringList binds;
  const QString where = searchClause(request.search, &binds);
  // One read transaction: the count and the rows see the same snapshot.
  if (Status s = execSql(db, path_, QStringLiteral("BEGIN")); !s) return s;
  struct EndRead {
    QSqlDatabase& db;
    ~EndRead() { execSql(db, QString(), QStringLiteral("COMMIT")); }
  } endRead{db};
  QSqlQuery q(db);
  q.prepare(QStringLiteral("SELECT count(*) FROM runs") + where);
  for (const QString& b : binds) q.addBindValue(b);
  if (!q.exec() || !q.next()) return sqlError(path_, QStringLiteral("counting runs"), q.lastError());
  page.total = q.value(0).toInt();
  q.finish();
  const QString order =
      request.order == Qt::AscendingOrder ? QStringLiteral(" ASC") : QStringLiteral(" DESC");
  const QString pageRows = QStringLiteral("FROM runs") + where + QStringLiteral(" ORDER BY ") +
                           sortExpression(request.sort) + order +
                           QStringLiteral(", run_id ASC LIMIT ? OFFSET ?");
  auto bindPage = [&] {
    for (const QString& b : binds) q.addBindValue(b);
    q.addBindValue(request.limit > 0 ? request.limit : -1);
    q.addBindValue(qMax(0, request.offset));
  };
  q.prepare(QStringLiteral("SELECT %1 ").arg(QLatin1String(kRowColumns)) + pageRows);
  bindPage();
  if (!q.exec()) return sqlError(path_, QStringLiteral("listing runs"), q.lastError());
  QHash<QString, qsizetype> rowOf;
  while (q.next()) {
    page.runs.append(readRow(q));
    rowOf.insert(page.runs.last().runId, page.runs.size() - 1);
  }
  q.finish();
  if (page.runs.isEmpty()) return page;
  // The page's checkpoints in one statement, not one per run.
  q.prepare(QStringLiteral("SELECT run_id, path, step, epoch, kind, bytes, time_ms FROM checkpoints"
                           " WHERE run_id IN (SELECT run_id ") +
            pageRows + QStringLiteral(") ORDER BY run_id, seq"));
  bindPage();
  if (!q.exec()) return sqlError(path_, QStringLiteral("listing checkpoints"), q.lastError());
  while (q.next()) {
    const auto it = rowOf.constFind(q.value(0).toString());
    if (it != rowOf.constEnd()) page.runs[*it].checkpoints.append(readCheckpoint(q, 1));
  }
  return page;
}

protocol::StatusOr<RunRecord> HistoryStore::find(const QString& runId) {
  if (Status s = ensureOpen(); !s) return s;
  QSqlDatabase db = QSqlDatabase::database(connection_, false);
  QSqlQuery q(db);
  q.prepare(
      QStringLiteral("SELECT %1, config_yaml FROM runs WHERE run_id = ?").arg(QLatin1String(kRowColumns)));
  q.addBindValue(runId);
  if (!q.exec()) return sqlError(path_, QStringLiteral("reading run %1").arg(runId), q.lastError());
  if (!q.next()) return Status::notFound(QStringLiteral("%1: no run %2").arg(path_, runId).toStdString());
  RunRecord r = readRow(q);
  r.configYaml = q.value(15).toString();  // after kRowColumns
  q.finish();
  if (Status s = loadCheckpoints(&r); !s) return s;
  return r;
}

Status HistoryStore::remove(const QString& runId) {
  if (Status s = ensureOpen(); !s) return s;
  QSqlDatabase db = QSqlDatabase::database(connection_, false);
  SqlTransaction tx(db);
  if (Status s = tx.begin(path_); !s) return s;
  QSqlQuery q(db);
  q.prepare(QStringLiteral("DELETE FROM runs WHERE run_id = ?"));  // checkpoints go by ON DELETE CASCADE
  q.addBindValue(runId);
  if (!q.exec()) return sqlError(path_, QStringLiteral("removing run %1").arg(runId), q.lastError());
  if (q.numRowsAffected() == 0)
    return Status::notFound(QStringLiteral("%1: no run %2").arg(path_, runId).toStdString());
  return tx.commit(path_);
}

Status HistoryStore::loadCheckpoints(RunRecord* r) {
  QSqlDatabase db = QSqlDatabase::database(connection_, false);
  QSqlQuery q(db);
  q.prepare(QStringLiteral(
      "SELECT path, step, epoch, kind, bytes, time_ms FROM checkpoints WHERE run_id = ? ORDER BY seq"));
  q.addBindValue(r->runId);
  if (!q.exec())
    return sqlError(path_, QStringLiteral("reading checkpoints of run %1").arg(r->runId), q.lastError());
  while (q.next()) r->checkpoints.append(readCheckpoint(q, 0));
  return Status::ok();
}

}  // namespace fs::app
