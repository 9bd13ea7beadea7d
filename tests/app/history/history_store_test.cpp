// HistoryStore on real SQLite files: runs recorded from real run directories,
// search / sort / paging, live updates, remote runs' location, migration of
// hand-made version 1 and 2 databases, refusal of newer or broken files, WAL and foreign keys.
#include "app/history/history_store.h"

#include <sys/stat.h>

#include <QFile>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "app/history/history_schema.h"
#include "app/history/run_dir_reader.h"
#include "tests/app/history/run_dir_fixture.h"

// QVERIFY for a Status, printing its message when it is not OK.
#define QVERIFY_OK(expr)                       \
  do {                                         \
    const ::fs::protocol::Status s_ = (expr);  \
    QVERIFY2(s_.isOk(), s_.message().c_str()); \
  } while (false)

namespace fs::app {
namespace {

namespace proto = fs::protocol;
using test::finishedRun;
using test::FixtureRun;
using test::writeRunDir;

RunRecord record(const QString& id, const QString& name, const QString& status, qint64 started, qint64 ended,
                 qint64 lastStep, const QString& host = QStringLiteral("node-a")) {
  RunRecord r;
  r.runId = id;
  r.name = name;
  r.runDir = QStringLiteral("/runs/") + name;
  r.host = host;
  r.status = status;
  r.startedMs = started;
  r.endedMs = ended;
  r.lastStep = lastStep;
  r.totalSteps = 100;
  r.finalLosses = {{QStringLiteral("laion"), 2.5}};
  return r;
}

QStringList ids(const HistoryPage& page) {
  QStringList out;
  for (const RunRecord& r : page.runs) out << r.runId;
  return out;
}

// A raw connection of the test's own, to look at the file behind the store's back.
class RawDb {
 public:
  explicit RawDb(const QString& path) : name_(QStringLiteral("raw-%1").arg(++counter_)) {
    db_ = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name_);
    db_.setDatabaseName(path);
    open_ = db_.open();
  }
  ~RawDb() {
    db_.close();
    db_ = QSqlDatabase();
    QSqlDatabase::removeDatabase(name_);
  }
  bool isOpen() const { return open_; }
  QVariant scalar(const QString& sql) {
    QSqlQuery q(db_);
    if (!q.exec(sql) || !q.next()) return QVariant(QStringLiteral("error: ") + q.lastError().text());
    return q.value(0);
  }
  bool exec(const QString& sql) {
    QSqlQuery q(db_);
    const bool ok = q.exec(sql);
    if (!ok) qWarning() << sql << q.lastError().text();
    return ok;
  }

 private:
  static inline int counter_ = 0;
  QString name_;
  QSqlDatabase db_;
  bool open_ = false;
};

}  // namespace

class HistoryStoreTest : public QObject {
  Q_OBJECT

 private:
  QString dbPath() const { return dir_->filePath(QStringLiteral("db/history.sqlite")); }
  std::unique_ptr<QTemporaryDir> dir_;

 private slots:
  void init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
  }

  void opensInWalModeWithForeignKeys() {
    HistoryStore store;
    const proto::Status s = store.open(dbPath());  // creates the db/ folder too
    QVERIFY2(s.isOk(), s.message().c_str());
    QVERIFY(store.isOpen());
    store.close();
    RawDb raw(dbPath());
    QVERIFY(raw.isOpen());
    QCOMPARE(raw.scalar(QStringLiteral("PRAGMA journal_mode")).toString(), QStringLiteral("wal"));
    QCOMPARE(raw.scalar(QStringLiteral("SELECT version FROM schema_version")).toInt(), kHistorySchemaVersion);
  }

  void recordsAFinishedRunFromItsDirectory() {
    const QString runDir =
        writeRunDir(dir_->path(), QStringLiteral("run-one"), finishedRun("id-one", 1'700'000'000'000, 10));
    auto read = readRunDirectory(runDir);
    QVERIFY2(read.isOk(), read.status().message().c_str());
    const RunRecord& r = read->record;
    QCOMPARE(r.runId, QStringLiteral("id-one"));
    QCOMPARE(r.name, QStringLiteral("run-one"));
    QCOMPARE(r.runDir, runDir);
    QCOMPARE(r.host, QStringLiteral("node-a"));
    QCOMPARE(r.status, QStringLiteral("finished"));
    QCOMPARE(r.engineVersion, QStringLiteral("0.1.0"));
    QCOMPARE(r.startedMs, 1'700'000'000'000LL);
    QCOMPARE(r.endedMs, 1'700'000'000'000LL + 10'002);
    QCOMPARE(r.totalSteps, 10);
    QCOMPARE(r.lastStep, 10);
    QCOMPARE(r.finalLosses.value(QStringLiteral("laion")), 1.25);  // run_finished's, not the last step's
    QCOMPARE(r.finalLosses.value(QStringLiteral("mmc4")), 0.75);
    QCOMPARE(r.checkpoints.size(), 2);
    QCOMPARE(r.checkpoints[0].path, QStringLiteral("checkpoint_step5.pt"));
    QCOMPARE(r.checkpoints[0].step, 5);
    QCOMPARE(r.checkpoints[0].kind, QStringLiteral("step"));
    QCOMPARE(r.checkpoints[1].path, QStringLiteral("checkpoint_final.pt"));
    QCOMPARE(r.checkpoints[1].bytes, 1010);
    QFile config(runDir + QStringLiteral("/config.yaml"));
    QVERIFY(config.open(QIODevice::ReadOnly));
    const QByteArray yaml = config.readAll();
    QCOMPARE(r.configYaml, QString::fromUtf8(yaml));
    QCOMPARE(read->badLines, 0);

    HistoryStore store;
    QVERIFY_OK(store.open(dbPath()));
    QVERIFY_OK(store.upsert(r));
    auto found = store.find(QStringLiteral("id-one"));
    QVERIFY2(found.isOk(), found.status().message().c_str());
    RunRecord expected = r;
    expected.configHash =
        QStringLiteral("sha256:") +
        QString::fromLatin1(QCryptographicHash::hash(yaml, QCryptographicHash::Sha256).toHex());
    QCOMPARE(found.value(), expected);
    // Importing again replaces the row instead of adding one.
    QVERIFY_OK(store.upsert(r));
    QCOMPARE(store.query({}).value().total, 1);
  }

  void recordsAFailedRunFromItsErrorEvent() {
    FixtureRun run;
    run.manifest = test::fixtureManifest("id-fail", 1'000'000, proto::RunState::kRunning);
    run.events.push_back({2'000'000, test::startedEvent("id-fail", 50)});
    run.events.push_back({2'001'000, test::stepEvent(1, 3.5, 3.25)});
    run.events.push_back({2'002'000, test::stepEvent(2, 3.0, 2.75)});
    proto::ErrorEvent error;
    error.message = "rank 1: CUDA out of memory";
    error.where = "forward";
    run.events.push_back({2'003'000, error});
    proto::ErrorEvent later;
    later.message = "collective timed out";
    run.events.push_back({2'004'000, later});
    auto read = readRunDirectory(writeRunDir(dir_->path(), QStringLiteral("failing"), run));
    QVERIFY2(read.isOk(), read.status().message().c_str());
    QCOMPARE(read->record.status, QStringLiteral("failed"));
    QCOMPARE(read->record.error,
             QStringLiteral("rank 1: CUDA out of memory"));  // the cause, not what followed
    QCOMPARE(read->record.endedMs, 2'003'000);
    QCOMPARE(read->record.lastStep, 2);
    QCOMPARE(read->record.finalLosses.value(QStringLiteral("laion")), 3.0);  // the last step's
  }

  void aRunStillGoingIsRunningAndKeepsItsFirstStartAfterAResume() {
    FixtureRun run = finishedRun("id-resumed", 5'000'000, 4);
    run.manifest.state = proto::RunState::kRunning;
    run.events.back() = {5'004'002, [] {
                           proto::RunFinishedEvent f;
                           f.status = proto::FinishStatus::kStopped;
                           f.steps = 4;
                           return f;
                         }()};
    run.events.push_back({9'000'000, test::startedEvent("id-resumed", 8)});  // resumed later
    run.events.push_back({9'001'000, test::stepEvent(5, 0.5, 0.25)});
    // A torn line and a partial last line (a write in progress) are not events.
    run.extraEventText = "{\"v\":\"1.0\",\"seq\":99,\n{\"v\":\"1.0\",\"seq\":100,\"t\":1,\"type\":\"st";
    auto read = readRunDirectory(writeRunDir(dir_->path(), QStringLiteral("resumed"), run));
    QVERIFY2(read.isOk(), read.status().message().c_str());
    const RunRecord& r = read->record;
    QCOMPARE(r.status, QStringLiteral("running"));
    QCOMPARE(r.startedMs, 5'000'000);
    QCOMPARE(r.endedMs, 0);
    QCOMPARE(r.durationMs(), -1);
    QCOMPARE(r.totalSteps, 8);
    QCOMPARE(r.lastStep, 5);
    QCOMPARE(r.finalLosses.value(QStringLiteral("mmc4")), 0.25);
    QCOMPARE(read->badLines, 1);
    QVERIFY2(read->firstBadLine.contains(QStringLiteral("line ")), qPrintable(read->firstBadLine));
  }

  void aFolderWithoutRunJsonIsNamed() {
    QVERIFY(QDir(dir_->path()).mkpath(QStringLiteral("empty")));
    auto read = readRunDirectory(dir_->filePath(QStringLiteral("empty")));
    QVERIFY(!read.isOk());
    QCOMPARE(read.status().code(), proto::Status::Code::kNotFound);
    QVERIFY2(QString::fromStdString(read.status().message()).contains(QStringLiteral("run.json")),
             read.status().message().c_str());
  }

  void readingReportsProgressAndStopsWhenCancelled() {
    const QString runDir =
        writeRunDir(dir_->path(), QStringLiteral("big"), finishedRun("id-big", 1'000, 400));
    const qint64 size = QFileInfo(runDir + QStringLiteral("/events.jsonl")).size();
    QList<qint64> reports;
    RunDirReadOptions options;
    options.chunkBytes = 4096;
    options.progress = [&](qint64 done, qint64 total) {
      QCOMPARE(total, size);
      reports << done;
    };
    auto read = readRunDirectory(runDir, options);
    QVERIFY(read.isOk());
    QCOMPARE(reports.size(), (size + 4095) / 4096);
    QCOMPARE(reports.last(), size);
    QCOMPARE(read->record.lastStep, 400);

    std::atomic<bool> cancel{false};
    int chunks = 0;
    options.cancel = &cancel;
    options.progress = [&](qint64, qint64) {
      if (++chunks == 3) cancel.store(true);
    };
    auto stopped = readRunDirectory(runDir, options);
    QVERIFY(stopped.isOk());
    QVERIFY(stopped->cancelled);
    QCOMPARE(chunks, 3);
  }

  void searchesEveryTextColumnAndSortsInSql() {
    HistoryStore store;
    QVERIFY_OK(store.open(dbPath()));
    RunRecord withCheckpoints = record("id-1", "laion-baseline", "finished", 1000, 61'000, 100);
    withCheckpoints.checkpoints = {
        {QStringLiteral("checkpoint_step50.pt"), 50, 0, QStringLiteral("step"), 10, 30'000},
        {QStringLiteral("checkpoint_final.pt"), 100, 0, QStringLiteral("final"), 20, 61'000}};
    QVERIFY_OK(store.upsert(withCheckpoints));
    QVERIFY_OK(store.upsert(record("id-2", "mmc4-only", "failed", 2000, 5000, 7, "gpu-node-7")));
    QVERIFY_OK(store.upsert(record("id-3", "Laion_big", "running", 3000, 0, 50)));
    QVERIFY_OK(store.upsert(record("id-4", "zeta 100%", "stopped", 4000, 1'004'000, 900)));

    auto all = store.query({});
    QVERIFY(all.isOk());
    QCOMPARE(ids(all.value()), (QStringList{"id-4", "id-3", "id-2", "id-1"}));  // newest first by default
    QCOMPARE(all->total, 4);
    QVERIFY(all->runs[0].configYaml.isEmpty());                       // listings leave the config out
    QCOMPARE(all->runs[3].checkpoints, withCheckpoints.checkpoints);  // in the order written
    QVERIFY(all->runs[0].checkpoints.isEmpty());

    HistoryQuery q;
    q.search = QStringLiteral("LAION");  // case-insensitive, name
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-3", "id-1"}));
    q.search = QStringLiteral("gpu-node");  // host
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-2"}));
    q.search = QStringLiteral("fail");  // status
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-2"}));
    q.search = QStringLiteral("id-4");  // run id
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-4"}));
    q.search = QStringLiteral("/runs/mmc4");  // run directory
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-2"}));
    q.search = QStringLiteral("laion running");  // every word must match
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-3"}));
    q.search = QStringLiteral("%");  // wildcards are text
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-4"}));
    q.search = QStringLiteral("n_b");
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-3"}));
    q.search = QStringLiteral("'; DROP TABLE runs; --");
    QCOMPARE(store.query(q).value().total, 0);

    q.search.clear();
    q.sort = HistorySort::kName;
    q.order = Qt::AscendingOrder;
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-1", "id-3", "id-2", "id-4"}));
    q.sort = HistorySort::kDuration;
    q.order = Qt::DescendingOrder;  // running (no duration) last
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-4", "id-1", "id-2", "id-3"}));
    q.sort = HistorySort::kSteps;
    q.order = Qt::AscendingOrder;
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-2", "id-3", "id-1", "id-4"}));
    q.sort = HistorySort::kStatus;
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-2", "id-1", "id-3", "id-4"}));

    q.sort = HistorySort::kStarted;
    q.limit = 2;
    q.offset = 1;
    auto page = store.query(q);
    QCOMPARE(ids(page.value()), (QStringList{"id-2", "id-3"}));
    QCOMPARE(page->total, 4);
  }

  void liveUpdatesBuildTheRow() {
    HistoryStore store;
    QVERIFY_OK(store.open(dbPath()));
    LiveRunStarted st;
    st.runId = QStringLiteral("live-1");
    st.name = QStringLiteral("live run");
    st.runDir = QStringLiteral("/runs/live");
    st.hosts = {QStringLiteral("a"), QStringLiteral("b")};
    st.configYaml = QStringLiteral("name: live\n");
    st.engineVersion = QStringLiteral("0.1.0");
    st.totalSteps = 20;
    st.startedMs = 10'000;
    QVERIFY_OK(store.recordStarted(st));
    RunRecord r = store.find(QStringLiteral("live-1")).value();
    QCOMPARE(r.status, QStringLiteral("running"));
    QCOMPARE(r.host, QStringLiteral("a, b"));
    QCOMPARE(r.configHash, configHash(st.configYaml));

    QVERIFY_OK(store.recordProgress({QStringLiteral("live-1"), 5, {{QStringLiteral("laion"), 2.0}}}));
    QVERIFY_OK(
        store.recordProgress({QStringLiteral("live-1"), 6, {{QStringLiteral("laion"), std::nan("")}}}));
    LiveCheckpoint c;
    c.runId = QStringLiteral("live-1");
    c.checkpoint = {QStringLiteral("checkpoint_step6.pt"), 6, 0, QStringLiteral("step"), 4096, 16'000};
    QVERIFY_OK(store.recordCheckpoint(c));
    r = store.find(QStringLiteral("live-1")).value();
    QCOMPARE(r.lastStep, 6);
    QVERIFY(std::isnan(r.finalLosses.value(QStringLiteral("laion"))));  // a diverged loss survives JSON
    QCOMPARE(r.checkpoints.size(), 1);
    QCOMPARE(r.checkpoints[0], c.checkpoint);

    LiveRunFinished fin;
    fin.runId = QStringLiteral("live-1");
    fin.status = QStringLiteral("stopped");
    fin.steps = 7;
    fin.endedMs = 30'000;
    QVERIFY_OK(store.recordFinished(fin));
    r = store.find(QStringLiteral("live-1")).value();
    QCOMPARE(r.status, QStringLiteral("stopped"));
    QCOMPARE(r.lastStep, 7);
    QCOMPARE(r.durationMs(), 20'000);
    QVERIFY(std::isnan(r.finalLosses.value(QStringLiteral("laion"))));  // no final losses given: kept

    // Resumed: running again, first start kept, the end cleared.
    st.startedMs = 50'000;
    QVERIFY_OK(store.recordStarted(st));
    r = store.find(QStringLiteral("live-1")).value();
    QCOMPARE(r.status, QStringLiteral("running"));
    QCOMPARE(r.startedMs, 10'000);
    QCOMPARE(r.endedMs, 0);
    QCOMPARE(r.checkpoints.size(), 1);

    const proto::Status missing = store.recordProgress({QStringLiteral("nope"), 1, {}});
    QCOMPARE(missing.code(), proto::Status::Code::kNotFound);
    QVERIFY2(QString::fromStdString(missing.message()).contains(QStringLiteral("nope")),
             missing.message().c_str());
    LiveCheckpoint orphan;
    orphan.runId = QStringLiteral("nope");
    orphan.checkpoint.path = QStringLiteral("x.pt");
    QCOMPARE(store.recordCheckpoint(orphan).code(), proto::Status::Code::kNotFound);
    QCOMPARE(store.recordFinished({QStringLiteral("nope"), QStringLiteral("failed"), 0, {}, 0, {}}).code(),
             proto::Status::Code::kNotFound);
  }

  void removingARunRemovesItsCheckpoints() {
    HistoryStore store;
    QVERIFY_OK(store.open(dbPath()));
    RunRecord r = record("id-x", "x", "finished", 1, 2, 3);
    r.checkpoints = {{QStringLiteral("a.pt"), 1, 0, QStringLiteral("step"), 1, 1},
                     {QStringLiteral("b.pt"), 2, 0, QStringLiteral("final"), 2, 2}};
    QVERIFY_OK(store.upsert(r));
    QVERIFY_OK(store.remove(QStringLiteral("id-x")));
    QCOMPARE(store.remove(QStringLiteral("id-x")).code(), proto::Status::Code::kNotFound);
    store.close();
    RawDb raw(dbPath());
    QCOMPARE(raw.scalar(QStringLiteral("SELECT count(*) FROM checkpoints")).toInt(), 0);
  }

  void migratesAVersionOneDatabaseKeepingItsRows() {
    {
      // What the first release wrote, by hand.
      RawDb raw(dbPath().replace(QStringLiteral("db/"), QString()));
      QVERIFY(raw.isOpen());
      QVERIFY(raw.exec(QStringLiteral("CREATE TABLE schema_version (version INTEGER NOT NULL)")));
      QVERIFY(raw.exec(QStringLiteral("INSERT INTO schema_version VALUES (1)")));
      QVERIFY(raw.exec(QStringLiteral(
          "CREATE TABLE runs (run_id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL DEFAULT '', run_dir TEXT "
          "NOT NULL"
          " DEFAULT '', host TEXT NOT NULL DEFAULT '', config_yaml TEXT NOT NULL DEFAULT '', config_hash "
          "TEXT NOT NULL"
          " DEFAULT '', status TEXT NOT NULL DEFAULT '', started_ms INTEGER NOT NULL DEFAULT 0, ended_ms "
          "INTEGER NOT"
          " NULL DEFAULT 0, total_steps INTEGER NOT NULL DEFAULT 0, last_step INTEGER NOT NULL DEFAULT 0,"
          " final_losses TEXT NOT NULL DEFAULT '{}')")));
      QVERIFY(
          raw.exec(QStringLiteral("INSERT INTO runs VALUES ('old-1', 'old run', '/runs/old', 'h1', 'name: "
                                  "old\n', 'sha256:00', 'finished',"
                                  " 100, 200, 10, 10, '{\"laion\":1.5}')")));
      QVERIFY(raw.exec(QStringLiteral("INSERT INTO runs (run_id, name) VALUES ('old-2', 'older')")));
    }
    const QString path = dbPath().replace(QStringLiteral("db/"), QString());
    HistoryStore store;
    const proto::Status s = store.open(path);
    QVERIFY2(s.isOk(), s.message().c_str());
    RunRecord r = store.find(QStringLiteral("old-1")).value();
    QCOMPARE(r.name, QStringLiteral("old run"));
    QCOMPARE(r.configYaml, QStringLiteral("name: old\n"));
    QCOMPARE(r.finalLosses.value(QStringLiteral("laion")), 1.5);
    QCOMPARE(r.durationMs(), 100);
    QVERIFY(r.engineVersion.isEmpty());  // a column version 1 did not have
    QCOMPARE(store.query({}).value().total, 2);
    // The new table works.
    LiveCheckpoint c;
    c.runId = QStringLiteral("old-1");
    c.checkpoint.path = QStringLiteral("checkpoint_final.pt");
    QVERIFY_OK(store.recordCheckpoint(c));
    store.close();
    RawDb raw(path);
    QCOMPARE(raw.scalar(QStringLiteral("SELECT version FROM schema_version")).toInt(), kHistorySchemaVersion);
    QCOMPARE(raw.scalar(QStringLiteral("PRAGMA integrity_check")).toString(), QStringLiteral("ok"));
  }

  void aRemoteRunKeepsItsLocationAndIsListedAndFoundAsHostColonPath() {
    HistoryStore store;
    QVERIFY_OK(store.open(dbPath()));
    RunRecord remote = record("id-r", "remote-run", "finished", 2000, 3000, 10, "gpu-node-3");
    remote.runDir = QStringLiteral("/scratch/runs/remote-run");
    remote.location = QStringLiteral("alice@login.cluster");
    QVERIFY_OK(store.upsert(remote));
    QVERIFY_OK(store.upsert(record("id-l", "local-run", "finished", 1000, 2000, 10)));

    RunRecord found = store.find(QStringLiteral("id-r")).value();
    QCOMPARE(found.location, remote.location);
    QCOMPARE(found.where(), QStringLiteral("alice@login.cluster:/scratch/runs/remote-run"));
    QVERIFY(store.find(QStringLiteral("id-l")).value().location.isEmpty());
    auto all = store.query({});
    QCOMPARE(ids(all.value()), (QStringList{"id-r", "id-l"}));
    QCOMPARE(all->runs[0].location, remote.location);

    HistoryQuery q;
    q.search = QStringLiteral("login.cluster");  // the location
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-r"}));
    q.search = QStringLiteral("cluster:/scratch");  // as listed, host:path
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-r"}));
    q.search = QStringLiteral("gpu-node-3");  // the node hosts are another column
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-r"}));
    q.search = QStringLiteral("/runs/local-run");
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-l"}));
    // By run directory as listed: "/runs/..." < "alice@...:/scratch/...".
    q.search.clear();
    q.sort = HistorySort::kRunDir;
    q.order = Qt::AscendingOrder;
    QCOMPARE(ids(store.query(q).value()), (QStringList{"id-l", "id-r"}));

    // Recorded again from this machine (e.g. the folder was copied here): local again.
    remote.location.clear();
    QVERIFY_OK(store.upsert(remote));
    QVERIFY(store.find(QStringLiteral("id-r")).value().location.isEmpty());
  }

  // Issue 42 (Low b): rows hold configs, whose pipe: commands may carry credentials.
  void theDatabaseIsTheOwnersOnly() {
    auto modeOf = [](const QString& path) {
      struct stat st {};
      return ::stat(QFile::encodeName(path).constData(), &st) == 0 ? int(st.st_mode & 07777) : -1;
    };
    {
      HistoryStore store;
      QVERIFY_OK(store.open(dbPath()));
      RunRecord r = record("id-c", "creds", "finished", 1, 2, 3);
      r.configYaml = QStringLiteral("data: {datasets: [{shards: 'pipe:curl -H \"token: s3cret\" x'}]}\n");
      QVERIFY_OK(store.upsert(r));
      QCOMPARE(modeOf(dbPath()), 0600);
      QCOMPARE(modeOf(dbPath() + QStringLiteral("-wal")), 0600);
    }
    // A file an older build made readable to all is made the owner's on open.
    const QString old = dir_->filePath(QStringLiteral("old.sqlite"));
    {
      HistoryStore store;
      QVERIFY_OK(store.open(old));
    }
    QVERIFY(::chmod(QFile::encodeName(old).constData(), 0644) == 0);
    HistoryStore store;
    QVERIFY_OK(store.open(old));
    QCOMPARE(modeOf(old), 0600);
  }

  // Issue 42 (Low a): a run id is run.json's, which a copied or hand-edited run
  // directory (a remote launch.json, run.json) can make collide with another run's.
  void aDifferentRunUnderATakenRunIdGetsARowOfItsOwn() {
    HistoryStore store;
    QVERIFY_OK(store.open(dbPath()));
    RunRecord first = record("id-x", "first", "finished", 1000, 2000, 10);
    QVERIFY_OK(store.upsert(first));
    RunRecord other = record("id-x", "other", "failed", 5000, 6000, 3);
    QString otherKey;
    QVERIFY_OK(store.upsert(other, &otherKey));
    QVERIFY2(otherKey.startsWith(QStringLiteral("id-x~")) && otherKey.size() == 4 + 1 + 8,
             qPrintable(otherKey));
    RunRecord remote = record("id-x", "first", "running", 7000, 0, 1, "gpu-9");
    remote.location = QStringLiteral("mallory@login");  // the same path on another host
    QString remoteKey;
    QVERIFY_OK(store.upsert(remote, &remoteKey));
    QVERIFY(remoteKey != otherKey && remoteKey.startsWith(QStringLiteral("id-x~")));

    QCOMPARE(store.query({}).value().total, 3);  // every run visible in History
    QCOMPARE(store.find(QStringLiteral("id-x")).value().where(), QStringLiteral("/runs/first"));
    QCOMPARE(store.find(QStringLiteral("id-x")).value().status, QStringLiteral("finished"));
    QCOMPARE(store.find(otherKey).value().where(), QStringLiteral("/runs/other"));
    QCOMPARE(store.find(remoteKey).value().where(), QStringLiteral("mallory@login:/runs/first"));

    // The same directory again (a re-import, in a later session) finds its own row.
    store.close();
    QVERIFY_OK(store.open(dbPath()));
    other.status = QStringLiteral("finished");
    QString again;
    QVERIFY_OK(store.upsert(other, &again));
    QCOMPARE(again, otherKey);
    QCOMPARE(store.find(otherKey).value().status, QStringLiteral("finished"));
    QCOMPARE(store.query({}).value().total, 3);

    // A live run under the taken id: its later updates go to its own row.
    LiveRunStarted st;
    st.runId = QStringLiteral("id-x");
    st.name = QStringLiteral("live");
    st.runDir = QStringLiteral("/runs/live");
    st.startedMs = 9000;
    QString liveKey;
    QVERIFY_OK(store.recordStarted(st, &liveKey));
    QVERIFY(liveKey.startsWith(QStringLiteral("id-x~")));
    QVERIFY(liveKey != otherKey && liveKey != remoteKey);
    QVERIFY_OK(store.recordProgress({QStringLiteral("id-x"), 42, {}}));
    QVERIFY_OK(store.recordFinished({QStringLiteral("id-x"), QStringLiteral("stopped"), 42, {}, 9500, {}}));
    QCOMPARE(store.find(liveKey).value().lastStep, 42);
    QCOMPARE(store.find(liveKey).value().status, QStringLiteral("stopped"));
    const RunRecord untouched = store.find(QStringLiteral("id-x")).value();
    QCOMPARE(untouched.lastStep, 10);
    QCOMPARE(untouched.status, QStringLiteral("finished"));
    QCOMPARE(store.query({}).value().total, 4);
  }

  void migratesAVersionTwoDatabaseKeepingItsRowsAsLocal() {
    const QString path = dir_->filePath(QStringLiteral("v2.sqlite"));
    {
      // What version 2 wrote, by hand.
      RawDb raw(path);
      QVERIFY(raw.isOpen());
      QVERIFY(raw.exec(QStringLiteral("CREATE TABLE schema_version (version INTEGER NOT NULL)")));
      QVERIFY(raw.exec(QStringLiteral("INSERT INTO schema_version VALUES (2)")));
      QVERIFY(raw.exec(QStringLiteral(
          "CREATE TABLE runs (run_id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL DEFAULT '',"
          " run_dir TEXT NOT NULL DEFAULT '', host TEXT NOT NULL DEFAULT '', config_yaml TEXT NOT NULL"
          " DEFAULT '', config_hash TEXT NOT NULL DEFAULT '', status TEXT NOT NULL DEFAULT '', started_ms"
          " INTEGER NOT NULL DEFAULT 0, ended_ms INTEGER NOT NULL DEFAULT 0, total_steps INTEGER NOT NULL"
          " DEFAULT 0, last_step INTEGER NOT NULL DEFAULT 0, final_losses TEXT NOT NULL DEFAULT '{}',"
          " engine_version TEXT NOT NULL DEFAULT '', error TEXT NOT NULL DEFAULT '')")));
      QVERIFY(raw.exec(QStringLiteral(
          "CREATE TABLE checkpoints (run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,"
          " path TEXT NOT NULL, step INTEGER NOT NULL DEFAULT 0, epoch INTEGER NOT NULL DEFAULT 0, kind TEXT"
          " NOT NULL DEFAULT '', bytes INTEGER NOT NULL DEFAULT 0, time_ms INTEGER NOT NULL DEFAULT 0, seq"
          " INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (run_id, path))")));
      QVERIFY(raw.exec(QStringLiteral(
          "INSERT INTO runs VALUES ('v2-1', 'v2 run', '/runs/v2', 'h1', 'name: v2\n', 'sha256:00', 'failed',"
          " 100, 300, 10, 4, '{\"laion\":2.5}', '0.1.0', 'CUDA out of memory')")));
      QVERIFY(raw.exec(QStringLiteral(
          "INSERT INTO checkpoints VALUES ('v2-1', 'checkpoint_step2.pt', 2, 0, 'step', 99, 200, 0)")));
    }
    HistoryStore store;
    QVERIFY_OK(store.open(path));
    RunRecord r = store.find(QStringLiteral("v2-1")).value();
    QCOMPARE(r.runDir, QStringLiteral("/runs/v2"));
    QVERIFY(r.location.isEmpty());  // rows of older builds are of this machine
    QCOMPARE(r.where(), QStringLiteral("/runs/v2"));
    QCOMPARE(r.error, QStringLiteral("CUDA out of memory"));
    QCOMPARE(r.engineVersion, QStringLiteral("0.1.0"));
    QCOMPARE(r.finalLosses.value(QStringLiteral("laion")), 2.5);
    QCOMPARE(r.checkpoints.size(), 1);
    QCOMPARE(r.checkpoints[0].path, QStringLiteral("checkpoint_step2.pt"));
    // The new column is written and read.
    r.location = QStringLiteral("login-1");
    QVERIFY_OK(store.upsert(r));
    QCOMPARE(store.find(QStringLiteral("v2-1")).value().location, QStringLiteral("login-1"));
    store.close();
    RawDb raw(path);
    QCOMPARE(raw.scalar(QStringLiteral("SELECT version FROM schema_version")).toInt(), kHistorySchemaVersion);
    QCOMPARE(raw.scalar(QStringLiteral("PRAGMA integrity_check")).toString(), QStringLiteral("ok"));
  }

  void migratesAVersionThreeDatabaseWithNoRollbacksAndCountsThem() {
    const QString path = dir_->filePath(QStringLiteral("v3.sqlite"));
    {
      // What version 3 wrote, by hand.
      RawDb raw(path);
      QVERIFY(raw.isOpen());
      QVERIFY(raw.exec(QStringLiteral("CREATE TABLE schema_version (version INTEGER NOT NULL)")));
      QVERIFY(raw.exec(QStringLiteral("INSERT INTO schema_version VALUES (3)")));
      QVERIFY(raw.exec(QStringLiteral(
          "CREATE TABLE runs (run_id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL DEFAULT '',"
          " run_dir TEXT NOT NULL DEFAULT '', host TEXT NOT NULL DEFAULT '', config_yaml TEXT NOT NULL"
          " DEFAULT '', config_hash TEXT NOT NULL DEFAULT '', status TEXT NOT NULL DEFAULT '', started_ms"
          " INTEGER NOT NULL DEFAULT 0, ended_ms INTEGER NOT NULL DEFAULT 0, total_steps INTEGER NOT NULL"
          " DEFAULT 0, last_step INTEGER NOT NULL DEFAULT 0, final_losses TEXT NOT NULL DEFAULT '{}',"
          " engine_version TEXT NOT NULL DEFAULT '', error TEXT NOT NULL DEFAULT '',"
          " location TEXT NOT NULL DEFAULT '')")));
      QVERIFY(raw.exec(QStringLiteral(
          "CREATE TABLE checkpoints (run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,"
          " path TEXT NOT NULL, step INTEGER NOT NULL DEFAULT 0, epoch INTEGER NOT NULL DEFAULT 0, kind TEXT"
          " NOT NULL DEFAULT '', bytes INTEGER NOT NULL DEFAULT 0, time_ms INTEGER NOT NULL DEFAULT 0, seq"
          " INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (run_id, path))")));
      QVERIFY(
          raw.exec(QStringLiteral("INSERT INTO runs VALUES ('v3-1', 'v3 run', '/runs/v3', 'h1', 'name: "
                                  "v3\n', 'sha256:00', 'finished',"
                                  " 100, 300, 10, 10, '{\"laion\":2.5}', '0.1.0', '', 'login-1')")));
    }
    HistoryStore store;
    QVERIFY_OK(store.open(path));
    RunRecord r = store.find(QStringLiteral("v3-1")).value();
    QCOMPARE(r.location, QStringLiteral("login-1"));
    QCOMPARE(r.lastStep, 10);
    QCOMPARE(r.rollbacks, 0);  // no older engine rolled back
    // The new column is written and read.
    r.rollbacks = 2;
    QVERIFY_OK(store.upsert(r));
    QCOMPARE(store.find(QStringLiteral("v3-1")).value().rollbacks, 2);
    store.close();
    RawDb raw(path);
    QCOMPARE(raw.scalar(QStringLiteral("SELECT version FROM schema_version")).toInt(), kHistorySchemaVersion);
    QCOMPARE(raw.scalar(QStringLiteral("SELECT rollbacks FROM runs WHERE run_id = 'v3-1'")).toInt(), 2);
    QCOMPARE(raw.scalar(QStringLiteral("PRAGMA integrity_check")).toString(), QStringLiteral("ok"));
  }

  void aRunDirectoryWithRollbacksIsCountedAndLiveProgressKeepsTheMost() {
    FixtureRun run = finishedRun("id-rb", 1'700'000'000'000, 10);
    proto::RollbackEvent rb;
    rb.step = 8;
    rb.to_step = 5;
    rb.rollbacks = 1;
    run.events.insert(run.events.begin() + 9, {1'700'000'000'000 + 8500, rb});
    rb.rollbacks = 2;
    run.events.insert(run.events.begin() + 10, {1'700'000'000'000 + 8600, rb});
    const QString runDir = writeRunDir(dir_->path(), QStringLiteral("run-rb"), run);
    auto read = readRunDirectory(runDir);
    QVERIFY2(read.isOk(), read.status().message().c_str());
    QCOMPARE(read->record.rollbacks, 2);

    HistoryStore store;
    QVERIFY_OK(store.open(dbPath()));
    RunRecord r = read->record;
    r.rollbacks = 0;
    QVERIFY_OK(store.upsert(r));
    LiveStepProgress p;
    p.runId = r.runId;
    p.step = 11;
    p.rollbacks = 3;
    QVERIFY_OK(store.recordProgress(p));
    p.rollbacks = 1;  // an older figure never lowers it
    QVERIFY_OK(store.recordProgress(p));
    QCOMPARE(store.find(r.runId).value().rollbacks, 3);
  }

  void refusesANewerSchemaAndChangesNothing() {
    {
      HistoryStore store;
      QVERIFY_OK(store.open(dbPath()));
    }
    {
      RawDb raw(dbPath());
      QVERIFY(raw.exec(QStringLiteral("UPDATE schema_version SET version = 99")));
    }
    HistoryStore store;
    const proto::Status s = store.open(dbPath());
    QCOMPARE(s.code(), proto::Status::Code::kUnsupported);
    const QString message = QString::fromStdString(s.message());
    QVERIFY2(message.contains(dbPath()) && message.contains(QStringLiteral("99")) &&
                 message.contains(QStringLiteral("newer than this build")),
             qPrintable(message));
    QVERIFY(!store.isOpen());
    RawDb raw(dbPath());
    QCOMPARE(raw.scalar(QStringLiteral("SELECT version FROM schema_version")).toInt(), 99);
  }

  void refusesAFileThatIsNotADatabase() {
    const QString path = dir_->filePath(QStringLiteral("notes.sqlite"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(4096, 'x'));
    f.close();
    HistoryStore store;
    const proto::Status s = store.open(path);
    QVERIFY(!s.isOk());
    QVERIFY2(QString::fromStdString(s.message()).contains(path), s.message().c_str());
    QVERIFY(!store.isOpen());
    QCOMPARE(store.upsert(record("a", "a", "x", 1, 2, 3)).code(), proto::Status::Code::kInvalidArgument);
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::HistoryStoreTest)
#include "history_store_test.moc"
