// Crash safety of the history database (NOTE [History crash safety]): a
// real child process writes runs through HistoryStore and is SIGKILLed in
// the middle of its loop, three times over on the same file. After each kill
// the database must pass SQLite's integrity and foreign key checks and hold
// every run the child reported committed, each with all three of its
// checkpoints (a transaction is all or nothing).
#include <QCoreApplication>
#include <QProcess>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

#include "app/history/history_store.h"

namespace fs::app {
namespace {

QString childPath() {
  return QCoreApplication::applicationDirPath() + QStringLiteral("/history_writer_child");
}

// Complete "committed <id>" lines; a line cut by the kill has no newline and
// does not count.
QStringList committedIds(const QByteArray& out) {
  QStringList ids;
  const qsizetype end = out.lastIndexOf('\n');
  if (end < 0) return ids;
  for (const QByteArray& line : out.left(end).split('\n')) {
    if (line.startsWith("committed ")) ids << QString::fromUtf8(line.mid(10));
  }
  return ids;
}

}  // namespace

class HistoryCrashTest : public QObject {
  Q_OBJECT

 private slots:
  void killedWriterLeavesEveryCommittedRun() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString db = dir.filePath(QStringLiteral("history.sqlite"));
    QStringList everyCommitted;
    // Kill after different numbers of commits, so the kill lands at different points.
    const QList<int> killAfter = {5, 23, 57};
    for (int round = 0; round < killAfter.size(); ++round) {
      QProcess child;
      child.setProgram(childPath());
      child.setArguments({db, QStringLiteral("round%1").arg(round)});
      child.start();
      QVERIFY2(child.waitForStarted(), qPrintable(child.errorString()));
      QByteArray out;
      while (committedIds(out).size() < killAfter[round]) {
        QVERIFY2(child.state() == QProcess::Running || child.bytesAvailable() > 0,
                 child.readAllStandardError().constData());
        child.waitForReadyRead(1000);
        out += child.readAllStandardOutput();
      }
      child.kill();  // SIGKILL: no destructor, no close, no checkpoint of the WAL
      QVERIFY(child.waitForFinished());
      QCOMPARE(child.exitStatus(), QProcess::CrashExit);
      out += child.readAllStandardOutput();
      const QStringList committed = committedIds(out);
      QVERIFY(committed.size() >= killAfter[round]);
      everyCommitted << committed;
      QVERIFY2(QFile::exists(db + QStringLiteral("-wal")), "the kill should leave a WAL file to recover");

      {
        const QString name = QStringLiteral("check-%1").arg(round);
        {
          QSqlDatabase raw = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
          raw.setDatabaseName(db);
          QVERIFY(raw.open());
          QSqlQuery q(raw);
          QVERIFY(q.exec(QStringLiteral("PRAGMA integrity_check")) && q.next());
          QCOMPARE(q.value(0).toString(), QStringLiteral("ok"));
          QVERIFY(q.exec(QStringLiteral("PRAGMA foreign_key_check")));
          QVERIFY2(!q.next(), "checkpoints without their run");
          // All or nothing: no run with only some of its checkpoints.
          QVERIFY(
              q.exec(QStringLiteral("SELECT count(*) FROM runs WHERE (SELECT count(*) FROM checkpoints c "
                                    "WHERE c.run_id = runs.run_id) != 3")));
          QVERIFY(q.next());
          QCOMPARE(q.value(0).toInt(), 0);
        }
        QSqlDatabase::removeDatabase(name);
      }

      HistoryStore store;
      const protocol::Status s = store.open(db);
      QVERIFY2(s.isOk(), s.message().c_str());
      for (const QString& id : everyCommitted) {
        auto r = store.find(id);
        QVERIFY2(r.isOk(), r.status().message().c_str());
        QCOMPARE(r->checkpoints.size(), 3);
        QCOMPARE(r->status, QStringLiteral("finished"));
      }
      // Only what the children wrote is there: a run per committed id, and at
      // most one more per round (committed, but killed before it printed).
      const int total = store.query({}).value().total;
      QVERIFY(total >= everyCommitted.size());
      QVERIFY(total <= everyCommitted.size() + round + 1);
    }
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::HistoryCrashTest)
#include "history_crash_test.moc"
