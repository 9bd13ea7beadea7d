// Remote run directories in the history: a run directory read through a
// HostRunDir over a real remote::LocalHost (the Host interface an SSH host
// implements) gives the record the local reader gives, and HistoryWorker
// records it with its location, listed and found as location:path.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>

#include "app/common/worker_thread.h"
#include "app/history/history_worker.h"
#include "app/history/run_dir_reader.h"
#include "app/monitor/host_file_source.h"
#include "app/remote/local_host.h"
#include "tests/app/history/run_dir_fixture.h"
#include "tests/app/history/worker_signals.h"

namespace fs::app {
namespace {

using test::finishedRun;
using test::writeRunDir;

}  // namespace

class RemoteRunDirTest : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<QTemporaryDir> dir_;
  std::shared_ptr<remote::LocalHost> host_ = std::make_shared<remote::LocalHost>();

 private slots:
  void init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
  }

  void aHostRunDirGivesTheRecordTheLocalReaderGives() {
    test::FixtureRun run = finishedRun("id-remote", 1'700'000'000'000, 40);
    run.extraEventText = "{not json\n";  // one bad line, counted the same way
    const QString dir = writeRunDir(dir_->path(), QStringLiteral("run-remote"), run);

    auto local = readRunDirectory(dir);
    QVERIFY2(local.isOk(), local.status().message().c_str());
    HostRunDir source(*host_, dir.toStdString());
    RunDirReadOptions options;
    options.chunkBytes = 333;  // many SFTP-sized reads, lines cut across them
    qint64 lastDone = 0, lastTotal = -1;
    int calls = 0;
    options.progress = [&](qint64 done, qint64 total) {
      ++calls;
      lastDone = done;
      lastTotal = total;
    };
    auto remote = readRunDirectory(source, dir, options);
    QVERIFY2(remote.isOk(), remote.status().message().c_str());

    QCOMPARE(remote->record, local->record);
    QCOMPARE(remote->record.runDir, dir);
    QCOMPARE(remote->record.name, QStringLiteral("run-remote"));
    QVERIFY(remote->record.location.isEmpty());  // the caller's to set
    QCOMPARE(remote->record.status, QStringLiteral("finished"));
    QCOMPARE(remote->record.lastStep, 40);
    QCOMPARE(remote->record.checkpoints.size(), 2);
    QVERIFY(!remote->record.configYaml.isEmpty());
    QCOMPARE(remote->badLines, 1);
    QCOMPARE(remote->badLines, local->badLines);
    QVERIFY(remote->hasEvents);
    QVERIFY(calls > 2);
    QCOMPARE(lastDone, lastTotal);
    QCOMPARE(lastTotal, QFileInfo(QDir(dir).filePath(QStringLiteral("events.jsonl"))).size());
  }

  void aRemoteReadStopsWhenCancelled() {
    const QString dir =
        writeRunDir(dir_->path(), QStringLiteral("big"), finishedRun("id-big", 1'000'000, 200));
    HostRunDir source(*host_, dir.toStdString());
    std::atomic<bool> cancel{false};
    RunDirReadOptions options;
    options.chunkBytes = 512;
    options.cancel = &cancel;
    int chunks = 0;
    options.progress = [&](qint64, qint64) {
      if (++chunks == 3) cancel.store(true);
    };
    auto read = readRunDirectory(source, dir, options);
    QVERIFY2(read.isOk(), read.status().message().c_str());
    QVERIFY(read->cancelled);
    QCOMPARE(chunks, 3);
  }

  void errorsNameTheHostAndThePath() {
    const QString missing = dir_->filePath(QStringLiteral("gone"));
    HostRunDir gone(*host_, missing.toStdString());
    auto read = readRunDirectory(gone, missing);
    QVERIFY(!read.isOk());
    QCOMPARE(read.status().code(), protocol::Status::Code::kNotFound);
    QVERIFY2(QString::fromStdString(read.status().message()).contains(QStringLiteral("local:") + missing),
             read.status().message().c_str());

    QVERIFY(QDir(dir_->path()).mkpath(QStringLiteral("empty")));
    const QString empty = dir_->filePath(QStringLiteral("empty"));
    HostRunDir noRun(*host_, empty.toStdString());
    read = readRunDirectory(noRun, empty);
    QVERIFY(!read.isOk());
    QCOMPARE(read.status().code(), protocol::Status::Code::kNotFound);
    const QString message = QString::fromStdString(read.status().message());
    QVERIFY2(message.contains(QStringLiteral("local:") + empty + QStringLiteral("/run.json")),
             qPrintable(message));

    // A run.json that does not decode: the decoder's message, naming host:path.
    const QString broken = dir_->filePath(QStringLiteral("broken"));
    QVERIFY(QDir(dir_->path()).mkpath(QStringLiteral("broken")));
    QFile f(QDir(broken).filePath(QStringLiteral("run.json")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"schema_version\": ");
    f.close();
    HostRunDir brokenDir(*host_, broken.toStdString());
    read = readRunDirectory(brokenDir, broken);
    QVERIFY(!read.isOk());
    QVERIFY2(QString::fromStdString(read.status().message()).contains(QStringLiteral("local:") + broken),
             read.status().message().c_str());
  }

  void theWorkerRecordsARemoteRunWithItsLocation() {
    const QString a = writeRunDir(dir_->path(), QStringLiteral("run-a"), finishedRun("id-a", 1'000'000, 5));
    WorkerThread<HistoryWorker> thread(new HistoryWorker, QStringLiteral("history"));
    HistoryWorker mirror;
    test::mirrorSignals(thread.worker(), &mirror);
    HistoryWorker* worker = thread.worker();
    QSignalSpy opened(&mirror, &HistoryWorker::opened);
    const QString db = dir_->filePath(QStringLiteral("history.sqlite"));
    QMetaObject::invokeMethod(worker, [worker, db] { worker->open(db); });
    QVERIFY(opened.wait(10'000));

    const QString location = QString::fromStdString(host_->name());
    QSignalSpy imported(&mirror, &HistoryWorker::imported);
    QSignalSpy failed(&mirror, &HistoryWorker::importFailed);
    QSignalSpy progress(&mirror, &HistoryWorker::importProgress);
    QSignalSpy changed(&mirror, &HistoryWorker::changed);
    std::shared_ptr<RunDirSource> source = hostRunDir(host_, a.toStdString());
    QMetaObject::invokeMethod(worker, [=] { worker->importRunDirFrom(source, a, location); });
    QVERIFY(changed.wait(10'000));
    QCOMPARE(failed.size(), 0);
    QCOMPARE(imported.size(), 1);
    const RunRecord r = imported[0].at(0).value<RunRecord>();
    QCOMPARE(r.runId, QStringLiteral("id-a"));
    QCOMPARE(r.location, location);
    QCOMPARE(r.runDir, a);
    QVERIFY(!progress.isEmpty());
    QCOMPARE(progress[0].at(0).toString(), location + QLatin1Char(':') + a);

    // Listed with its location, found by it.
    QSignalSpy queried(&mirror, &HistoryWorker::queried);
    HistoryQuery q;
    q.search = location + QLatin1Char(':') + a;
    QMetaObject::invokeMethod(worker, [=] { worker->query(q); });
    QVERIFY(queried.wait(10'000));
    const HistoryPage page = queried.takeFirst().at(0).value<HistoryPage>();
    QVERIFY2(page.error.isEmpty(), qPrintable(page.error));
    QCOMPARE(page.total, 1);
    QCOMPARE(page.runs[0].where(), location + QLatin1Char(':') + a);

    // A missing remote directory: the failure names location:path.
    const QString missing = dir_->filePath(QStringLiteral("missing"));
    std::shared_ptr<RunDirSource> gone = hostRunDir(host_, missing.toStdString());
    QMetaObject::invokeMethod(worker, [=] { worker->importRunDirFrom(gone, missing, location); });
    QVERIFY(failed.wait(10'000));
    QCOMPARE(failed[0].at(0).toString(), location + QLatin1Char(':') + missing);
    QVERIFY2(failed[0].at(1).toString().contains(missing), qPrintable(failed[0].at(1).toString()));
    QCOMPARE(failed[0].at(2).toBool(), false);
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::RemoteRunDirTest)
#include "remote_run_dir_test.moc"
