// HistoryWorker on its own thread: imports real run directories (progress,
// cancellation, errors), live updates as queued calls, queries, config diffs
// of recorded runs and reference curve imports — all answers as signals.
#include "app/history/history_worker.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/common/worker_thread.h"
#include "tests/app/history/run_dir_fixture.h"
#include "tests/app/history/worker_signals.h"

namespace fs::app {
namespace {

using test::finishedRun;
using test::writeRunDir;

template <class... Args>
void invoke(HistoryWorker* worker, void (HistoryWorker::*slot)(Args...), std::decay_t<Args>... args) {
  QMetaObject::invokeMethod(
      worker, [=] { (worker->*slot)(args...); }, Qt::QueuedConnection);
}

}  // namespace

class HistoryWorkerTest : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<QTemporaryDir> dir_;
  std::unique_ptr<WorkerThread<HistoryWorker>> thread_;
  std::unique_ptr<HistoryWorker> mirror_;  // the worker's signals, on this thread (worker_signals.h)
  HistoryWorker* worker() const { return thread_->worker(); }
  HistoryWorker* mirror() const { return mirror_.get(); }

  void startWorker() {
    thread_ = std::make_unique<WorkerThread<HistoryWorker>>(new HistoryWorker, QStringLiteral("history"));
    mirror_ = std::make_unique<HistoryWorker>();
    test::mirrorSignals(worker(), mirror_.get());
  }
  QString dbPath() const { return dir_->filePath(QStringLiteral("history.sqlite")); }

  HistoryPage queryNow(const HistoryQuery& q) {
    QSignalSpy spy(mirror(), &HistoryWorker::queried);
    invoke(worker(), &HistoryWorker::query, q);
    if (!spy.wait(10'000)) return {};
    return spy.takeFirst().at(0).value<HistoryPage>();
  }

 private slots:
  void init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    startWorker();
    QSignalSpy opened(mirror(), &HistoryWorker::opened);
    invoke(worker(), &HistoryWorker::open, dbPath());
    QVERIFY(opened.wait(10'000));
    QCOMPARE(opened.takeFirst().at(0).toString(), dbPath());
  }
  void cleanup() {
    thread_.reset();
    mirror_.reset();
  }

  void importsRunDirectoriesAndReportsProgress() {
    const QString a = writeRunDir(dir_->path(), QStringLiteral("run-a"), finishedRun("id-a", 1'000'000, 5));
    const QString b = writeRunDir(dir_->path(), QStringLiteral("run-b"), finishedRun("id-b", 2'000'000, 3));
    QVERIFY(QDir(dir_->path()).mkpath(QStringLiteral("not-a-run")));
    const QString bad = dir_->filePath(QStringLiteral("not-a-run"));
    QSignalSpy imported(mirror(), &HistoryWorker::imported);
    QSignalSpy failed(mirror(), &HistoryWorker::importFailed);
    QSignalSpy progress(mirror(), &HistoryWorker::importProgress);
    QSignalSpy changed(mirror(), &HistoryWorker::changed);
    invoke(worker(), &HistoryWorker::importRunDirs, QStringList{a, bad, b});
    QVERIFY(changed.wait(10'000));
    QCOMPARE(imported.size(), 2);
    QCOMPARE(imported[0].at(0).value<RunRecord>().runId, QStringLiteral("id-a"));
    QCOMPARE(imported[1].at(0).value<RunRecord>().runId, QStringLiteral("id-b"));
    QCOMPARE(failed.size(), 1);
    QCOMPARE(failed[0].at(0).toString(), bad);
    QVERIFY2(failed[0].at(1).toString().contains(QStringLiteral("run.json")),
             qPrintable(failed[0].at(1).toString()));
    QCOMPARE(failed[0].at(2).toBool(), false);
    QVERIFY(progress.size() >= 2);
    QCOMPARE(progress.last().at(1).toLongLong(),
             progress.last().at(2).toLongLong());  // done == total at the end

    const HistoryPage page = queryNow({});
    QVERIFY2(page.error.isEmpty(), qPrintable(page.error));
    QCOMPARE(page.total, 2);
    QCOMPARE(page.runs[0].runId, QStringLiteral("id-b"));
  }

  void cancellingAnImportStoresNothing() {
    // ~20k events: more than one 1 MiB chunk.
    const QString big =
        writeRunDir(dir_->path(), QStringLiteral("big"), finishedRun("id-big", 1'000, 20'000));
    QVERIFY(QFileInfo(big + QStringLiteral("/events.jsonl")).size() > (2 << 20));
    HistoryWorker* w = worker();
    // Cancel from the first progress report, on the worker's thread: the import
    // stops at its next chunk, whatever the machine's speed.
    connect(
        w, &HistoryWorker::importProgress, w, [w] { w->cancel(); }, Qt::DirectConnection);
    QSignalSpy failed(mirror(), &HistoryWorker::importFailed);
    invoke(w, &HistoryWorker::importRunDir, big);
    QVERIFY(failed.wait(10'000));
    QCOMPARE(failed[0].at(2).toBool(), true);
    QVERIFY2(failed[0].at(1).toString().contains(QStringLiteral("cancelled")),
             qPrintable(failed[0].at(1).toString()));
    QCOMPARE(queryNow({}).total, 0);
  }

  void liveUpdatesArriveAsQueuedCalls() {
    QSignalSpy changed(mirror(), &HistoryWorker::changed);
    QSignalSpy failed(mirror(), &HistoryWorker::failed);
    LiveRunStarted st;
    st.runId = QStringLiteral("live");
    st.name = QStringLiteral("live");
    st.runDir = dir_->filePath(QStringLiteral("live"));
    st.totalSteps = 10;
    st.startedMs = 1000;
    invoke(worker(), &HistoryWorker::recordStarted, st);
    invoke(worker(), &HistoryWorker::recordProgress, LiveStepProgress{QStringLiteral("live"), 3, {}});
    LiveCheckpoint c;
    c.runId = QStringLiteral("live");
    c.checkpoint.path = QStringLiteral("checkpoint_step3.pt");
    c.checkpoint.step = 3;
    invoke(worker(), &HistoryWorker::recordCheckpoint, c);
    invoke(worker(), &HistoryWorker::recordFinished,
           LiveRunFinished{QStringLiteral("live"),
                           QStringLiteral("finished"),
                           4,
                           {{QStringLiteral("laion"), 0.5}},
                           5000,
                           {}});
    invoke(worker(), &HistoryWorker::recordProgress, LiveStepProgress{QStringLiteral("ghost"), 1, {}});
    QVERIFY(failed.wait(10'000));  // requests run in order: the ghost's failure comes last
    QCOMPARE(changed.size(), 4);
    QCOMPARE(failed[0].at(0).toString(), QStringLiteral("record"));
    QVERIFY(failed[0].at(1).toString().contains(QStringLiteral("ghost")));
    const HistoryPage page = queryNow({});
    QCOMPARE(page.total, 1);
    const RunRecord& r = page.runs[0];
    QCOMPARE(r.status, QStringLiteral("finished"));
    QCOMPARE(r.lastStep, 4);
    QCOMPARE(r.durationMs(), 4000);
    QCOMPARE(r.checkpoints.size(), 1);
    QCOMPARE(r.finalLosses.value(QStringLiteral("laion")), 0.5);
  }

  void diffsTheConfigsOfRecordedRuns() {
    const QString a = writeRunDir(dir_->path(), QStringLiteral("a"), finishedRun("id-a", 1000, 2, 1e-4));
    const QString b = writeRunDir(dir_->path(), QStringLiteral("b"), finishedRun("id-b", 2000, 2, 2e-4));
    QSignalSpy changed(mirror(), &HistoryWorker::changed);
    invoke(worker(), &HistoryWorker::importRunDirs, QStringList{a, b});
    QVERIFY(changed.wait(10'000));
    QSignalSpy diffs(mirror(), &HistoryWorker::configDiff);
    invoke(worker(), &HistoryWorker::diffConfigs, QStringList{"id-a", "id-b"}, quint64(7));
    QVERIFY(diffs.wait(10'000));
    const auto diff = diffs.takeFirst().at(0).value<RunConfigDiff>();
    QVERIFY2(diff.error.isEmpty(), qPrintable(diff.error));
    QCOMPARE(diff.requestId, quint64(7));
    QCOMPARE(diff.labels, (QStringList{"a", "b"}));
    QStringList paths;
    for (const auto& f : diff.fields) paths << f.path;
    QCOMPARE(paths, (QStringList{"name", "optim.lr"}));  // finishedRun names the config after the id

    invoke(worker(), &HistoryWorker::diffConfigs, QStringList{"id-a", "id-none"}, quint64(8));
    QVERIFY(diffs.wait(10'000));
    const auto missing = diffs.takeFirst().at(0).value<RunConfigDiff>();
    QVERIFY2(missing.error.contains(QStringLiteral("id-none")), qPrintable(missing.error));
    QVERIFY(missing.fields.isEmpty());
  }

  void importsReferenceCurves() {
    const QString path = dir_->filePath(QStringLiteral("ref.csv"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("step,loss\n1,3\n2,oops\n");
    f.close();
    QSignalSpy curves(mirror(), &HistoryWorker::referenceCurves);
    invoke(worker(), &HistoryWorker::importReferenceCurves, path, ReferenceCurveOptions{});
    QVERIFY(curves.wait(10'000));
    const auto result = curves.takeFirst().at(0).value<ReferenceCurveImport>();
    QCOMPARE(result.path, path);
    QCOMPARE(result.error, path + QStringLiteral(" line 3, column 2 ('loss'): 'oops' is not a number"));
  }

  void aDatabaseThatCannotOpenIsReported() {
    startWorker();
    const QString notADb = dir_->filePath(QStringLiteral("junk.sqlite"));
    QFile f(notADb);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(8192, 'j'));
    f.close();
    QSignalSpy failed(mirror(), &HistoryWorker::failed);
    invoke(worker(), &HistoryWorker::open, notADb);
    QVERIFY(failed.wait(10'000));
    QCOMPARE(failed[0].at(0).toString(), QStringLiteral("open"));
    QVERIFY(failed[0].at(1).toString().contains(notADb));
    const HistoryPage page = queryNow({});
    QCOMPARE(page.error, QStringLiteral("the history database is not open"));
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::HistoryWorkerTest)
#include "history_worker_test.moc"
