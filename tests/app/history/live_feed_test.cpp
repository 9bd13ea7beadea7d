// LiveHistoryFeed: which updates a live run's events give (step progress
// throttled by event time, held-back progress sent before later updates),
// and that recording a run live gives the same row as importing its
// directory afterwards — for a finished, a failed and a resumed run.
#include "app/history/live_feed.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/common/worker_thread.h"
#include "app/history/history_store.h"
#include "app/history/history_worker.h"
#include "app/history/run_dir_reader.h"
#include "tests/app/history/run_dir_fixture.h"
#include "tests/app/history/worker_signals.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;

proto::Event at(std::int64_t t, proto::EventBody body) {
  proto::Event e;
  e.t = t;
  e.body = std::move(body);
  return e;
}

// "started", "progress 3", "checkpoint 5", "finished stopped 7" for each update.
QStringList describe(const QList<LiveUpdate>& updates) {
  QStringList out;
  for (const LiveUpdate& u : updates) {
    if (const auto* s = std::get_if<LiveRunStarted>(&u))
      out << QStringLiteral("started %1").arg(s->runId);
    else if (const auto* p = std::get_if<LiveStepProgress>(&u))
      out << QStringLiteral("progress %1").arg(p->step);
    else if (const auto* c = std::get_if<LiveCheckpoint>(&u))
      out << QStringLiteral("checkpoint %1").arg(c->checkpoint.step);
    else if (const auto* f = std::get_if<LiveRunFinished>(&u))
      out << QStringLiteral("finished %1 %2").arg(f->status).arg(f->steps);
  }
  return out;
}

proto::Status apply(HistoryStore& store, const LiveUpdate& u) {
  return std::visit(
      [&](const auto& x) -> proto::Status {
        using U = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<U, LiveRunStarted>)
          return store.recordStarted(x);
        else if constexpr (std::is_same_v<U, LiveStepProgress>)
          return store.recordProgress(x);
        else if constexpr (std::is_same_v<U, LiveCheckpoint>)
          return store.recordCheckpoint(x);
        else
          return store.recordFinished(x);
      },
      u);
}

// The events of a run directory, through the protocol decoder.
std::vector<proto::Event> readEvents(const QString& runDir) {
  QFile f(runDir + QStringLiteral("/events.jsonl"));
  if (!f.open(QIODevice::ReadOnly)) return {};
  const QByteArray bytes = f.readAll();
  proto::EventDecoder decoder;
  std::vector<proto::Event> events;
  for (const auto& line : decoder.feed(std::string_view(bytes.constData(), bytes.size())))
    if (line.kind == proto::DecodedLine::Kind::kEvent) events.push_back(line.event);
  return events;
}

QString readConfig(const QString& runDir) {
  QFile f(runDir + QStringLiteral("/config.yaml"));
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class LiveFeedTest : public QObject {
  Q_OBJECT

 private slots:
  void throttlesStepProgressByEventTime() {
    LiveHistoryFeed feed(QStringLiteral("/runs/r"), QStringLiteral("r"), QStringLiteral("name: r\n"), 10'000);
    QList<LiveUpdate> updates;
    auto add = [&](const proto::Event& e) { updates += feed.feed(e); };
    add(at(0, test::stepEvent(1, 1, 1)));  // before run_started: no run id, ignored
    QVERIFY(updates.isEmpty());
    add(at(0, test::startedEvent("id", 30)));
    for (int s = 1; s <= 30; ++s) {
      add(at(s * 1000, test::stepEvent(s, 3, 2)));
      if (s == 15) add(at(s * 1000 + 500, test::checkpointEvent(15, proto::CheckpointKind::kStep)));
    }
    // Step 1 goes at once; the next at t >= 11 s (step 11), then step 15 is
    // sent ahead of its checkpoint, then t >= 21 s (step 21).
    QCOMPARE(describe(updates), (QStringList{"started id", "progress 1", "progress 11", "progress 15",
                                             "checkpoint 15", "progress 21"}));
    const auto held = feed.flush();
    QVERIFY(held.has_value());
    QCOMPARE(held->step, 30);
    QVERIFY(!feed.flush().has_value());

    updates.clear();
    add(at(31'000, test::stepEvent(31, 3, 2)));
    proto::RunFinishedEvent fin;
    fin.status = proto::FinishStatus::kStopped;
    fin.steps = 31;
    add(at(31'500, fin));
    QCOMPARE(describe(updates), (QStringList{"progress 31", "finished stopped 31"}));
  }

  void aFailedStateEndsTheRunWithItsFirstError() {
    LiveHistoryFeed feed(QStringLiteral("/runs/r"), QStringLiteral("r"), QString());
    feed.feed(at(0, test::startedEvent("id", 10)));
    proto::ErrorEvent first;
    first.message = "data: no shard matches";
    feed.feed(at(100, first));
    proto::ErrorEvent second;
    second.message = "rank 1 exited";
    feed.feed(at(200, second));
    proto::StateEvent failed;
    failed.state = proto::RunState::kFailed;
    const QList<LiveUpdate> updates = feed.feed(at(300, failed));
    QCOMPARE(updates.size(), 1);
    const auto& f = std::get<LiveRunFinished>(updates[0]);
    QCOMPARE(f.status, QStringLiteral("failed"));
    QCOMPARE(f.error, QStringLiteral("data: no shard matches"));
    QCOMPARE(f.endedMs, 100);
  }

  void recordingLiveMatchesImportingTheDirectory_data() {
    QTest::addColumn<int>("kind");
    QTest::newRow("finished") << 0;
    QTest::newRow("failed") << 1;
    QTest::newRow("resumed") << 2;
  }

  void recordingLiveMatchesImportingTheDirectory() {
    QFETCH(int, kind);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    test::FixtureRun run = test::finishedRun("id-live", 1'000'000, 25);
    if (kind == 1) {
      run.events.pop_back();  // no run_finished: it died
      proto::ErrorEvent error;
      error.message = "rank 0: out of memory";
      run.events.push_back({1'030'000, error});
      proto::StateEvent failed;
      failed.state = proto::RunState::kFailed;
      run.events.push_back({1'030'001, failed});
      run.manifest.state = proto::RunState::kFailed;
    } else if (kind == 2) {
      run.manifest.state = proto::RunState::kRunning;
      run.events.push_back({2'000'000, test::startedEvent("id-live", 40)});
      run.events.push_back({2'001'000, test::stepEvent(26, 0.5, 0.25)});
      run.events.push_back({2'002'000, test::stepEvent(27, 0.25, 0.125)});
    }
    const QString runDir = test::writeRunDir(dir.path(), QStringLiteral("live-run"), run);

    HistoryStore imported;
    QVERIFY(imported.open(dir.filePath(QStringLiteral("imported.sqlite"))).isOk());
    auto read = readRunDirectory(runDir);
    QVERIFY2(read.isOk(), read.status().message().c_str());
    QVERIFY(imported.upsert(read->record).isOk());

    HistoryStore live;
    QVERIFY(live.open(dir.filePath(QStringLiteral("live.sqlite"))).isOk());
    LiveHistoryFeed feed(runDir, QStringLiteral("live-run"), readConfig(runDir), 5'000);
    for (const proto::Event& e : readEvents(runDir)) {
      for (const LiveUpdate& u : feed.feed(e)) {
        const proto::Status s = apply(live, u);
        QVERIFY2(s.isOk(), s.message().c_str());
      }
    }
    if (auto held = feed.flush()) QVERIFY(live.recordProgress(*held).isOk());

    const RunRecord a = imported.find(QStringLiteral("id-live")).value();
    const RunRecord b = live.find(QStringLiteral("id-live")).value();
    QCOMPARE(b.status, a.status);
    QCOMPARE(b.endedMs, a.endedMs);
    QCOMPARE(b.lastStep, a.lastStep);
    QCOMPARE(b.finalLosses, a.finalLosses);
    QCOMPARE(b, a);  // and everything else
  }

  void postsUpdatesToAWorkerOnItsThread() {
    QTemporaryDir dir;
    WorkerThread<HistoryWorker> thread(new HistoryWorker, QStringLiteral("history"));
    HistoryWorker mirror;
    test::mirrorSignals(thread.worker(), &mirror);
    QSignalSpy opened(&mirror, &HistoryWorker::opened);
    QMetaObject::invokeMethod(thread.worker(), "open", Qt::QueuedConnection,
                              Q_ARG(QString, dir.filePath(QStringLiteral("h.sqlite"))));
    QVERIFY(opened.wait(10'000));
    LiveHistoryFeed feed(QStringLiteral("/runs/p"), QStringLiteral("p"), QString());
    QList<LiveUpdate> updates = feed.feed(at(10, test::startedEvent("id-p", 3)));
    updates += feed.feed(at(20, test::stepEvent(1, 2, 1)));
    for (const LiveUpdate& u : updates) postLiveUpdate(thread.worker(), u);
    QSignalSpy queried(&mirror, &HistoryWorker::queried);
    QMetaObject::invokeMethod(thread.worker(), "query", Qt::QueuedConnection,
                              Q_ARG(fs::app::HistoryQuery, HistoryQuery{}));
    QVERIFY(queried.wait(10'000));  // requests run in order: both updates are in
    const auto page = queried[0].at(0).value<HistoryPage>();
    QCOMPARE(page.total, 1);
    QCOMPARE(page.runs[0].runId, QStringLiteral("id-p"));
    QCOMPARE(page.runs[0].lastStep, 1);
    QCOMPARE(page.runs[0].status, QStringLiteral("running"));
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::LiveFeedTest)
#include "live_feed_test.moc"
