// The run catalog on a temporary run root: good, broken and newer-major
// manifests, things that are not runs, a missing root, cancellation, and the
// worker scanning on its own thread.
#include "app/runs/run_catalog.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include "app/common/worker_thread.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/protocol/wire/run_manifest.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;

std::filesystem::path fsPath(const QString& p) {
  return std::filesystem::path(QFile::encodeName(p).toStdString());
}

proto::RunManifest manifest(const std::string& id, std::int64_t created, proto::RunState state) {
  proto::RunManifest m;
  m.run_id = id;
  m.engine_version = "0.1.0";
  m.created = created;
  m.nnodes = 1;
  m.nproc_per_node = 2;
  m.world_size = 2;
  m.launcher = proto::LauncherKind::kLocal;
  m.state = state;
  m.updated = created;
  return m;
}

void writeRun(const QString& root, const QString& name, const proto::RunManifest& m) {
  const auto dir = fsPath(root + QLatin1Char('/') + name);
  QVERIFY(proto::RunDir(dir).create().isOk());
  const proto::Status s = proto::writeManifest(dir, m);
  QVERIFY2(s.isOk(), s.message().c_str());
}

void writeText(const QString& path, const QByteArray& text) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  f.write(text);
}

}  // namespace

class RunCatalogTest : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    root_ = std::make_unique<QTemporaryDir>();
    QVERIFY(root_->isValid());
    const QString r = root_->path();
    writeRun(r, QStringLiteral("run-a"), manifest("id-a", 1'700'000'000'000, proto::RunState::kFinished));
    writeRun(r, QStringLiteral("run-b"), manifest("id-b", 1'700'000'100'000, proto::RunState::kRunning));
    // Torn / garbage run.json.
    QVERIFY(QDir(r).mkpath(QStringLiteral("run-broken")));
    writeText(r + QStringLiteral("/run-broken/run.json"), "{\"run_id\": \"x\", ");
    // Written by a newer engine: major version 2.
    writeRun(r, QStringLiteral("run-newer"), manifest("id-n", 1'700'000'200'000, proto::RunState::kRunning));
    QFile newer(r + QStringLiteral("/run-newer/run.json"));
    QVERIFY(newer.open(QIODevice::ReadOnly));
    QByteArray text = newer.readAll();
    newer.close();
    const QByteArray current =
        "\"" +
        QByteArray(proto::kManifestSchemaVersion.data(), qsizetype(proto::kManifestSchemaVersion.size())) +
        "\"";
    QVERIFY(text.contains(current));
    text.replace(current, "\"2.0\"");
    writeText(newer.fileName(), text);
    // Not runs: a folder without run.json, a file, a hidden folder with a run.json.
    QVERIFY(QDir(r).mkpath(QStringLiteral("not-a-run/logs")));
    writeText(r + QStringLiteral("/stray.txt"), "hello");
    writeRun(r, QStringLiteral(".hidden"), manifest("id-h", 1, proto::RunState::kRunning));
  }

  void listsRunsNewestFirstThenUnreadable() {
    const RunScan scan = scanRunRoot(root_->path());
    QVERIFY2(scan.error.isEmpty(), qPrintable(scan.error));
    QVERIFY(!scan.cancelled);
    QStringList names;
    for (const auto& r : scan.runs) names << r.name;
    QCOMPARE(names, (QStringList{"run-b", "run-a", "run-broken", "run-newer"}));

    const RunSummary& b = scan.runs[0];
    QVERIFY(b.isOk());
    QCOMPARE(b.runId, QStringLiteral("id-b"));
    QCOMPARE(b.state, QStringLiteral("running"));
    QCOMPARE(b.created.toMSecsSinceEpoch(), 1'700'000'100'000);
    QCOMPARE(b.worldSize, 2);
    QCOMPARE(b.launcher, QStringLiteral("local"));
    QCOMPARE(b.dir, root_->path() + QStringLiteral("/run-b"));
    QCOMPARE(scan.runs[1].state, QStringLiteral("finished"));
  }

  void unreadableManifestsCarryTheReason() {
    const RunScan scan = scanRunRoot(root_->path());
    QCOMPARE(scan.runs.size(), 4);
    const RunSummary& broken = scan.runs[2];
    QVERIFY(!broken.isOk());
    QVERIFY2(broken.error.contains(QStringLiteral("run.json")), qPrintable(broken.error));
    QVERIFY(broken.runId.isEmpty());
    const RunSummary& newer = scan.runs[3];
    QVERIFY(!newer.isOk());
    QVERIFY2(newer.error.contains(QStringLiteral("newer")), qPrintable(newer.error));
    QVERIFY2(newer.error.contains(QStringLiteral("2.0")), qPrintable(newer.error));
  }

  void missingRootIsAnErrorNotAThrow() {
    const QString missing = root_->path() + QStringLiteral("/no/such/root");
    const RunScan scan = scanRunRoot(missing);
    QVERIFY(scan.runs.isEmpty());
    QVERIFY(scan.rootMissing);
    QVERIFY(scan.error.contains(missing));
    // A file is not a root either, but it exists.
    const RunScan file = scanRunRoot(root_->path() + QStringLiteral("/stray.txt"));
    QVERIFY(!file.error.isEmpty());
    QVERIFY(!file.rootMissing);
  }

  void cancelledScanStopsEarly() {
    std::atomic<bool> cancel{true};
    const RunScan scan = scanRunRoot(root_->path(), &cancel);
    QVERIFY(scan.cancelled);
    QVERIFY(scan.runs.isEmpty());
  }

  void workerScansOffTheCallingThread() {
    WorkerThread<RunCatalogWorker> thread(new RunCatalogWorker, QStringLiteral("test-catalog"));
    std::atomic<QThread*> emittedOn{nullptr};
    connect(
        thread.worker(), &RunCatalogWorker::scanned, thread.worker(),
        [&emittedOn] { emittedOn = QThread::currentThread(); }, Qt::DirectConnection);
    // Results are queued to this (the test's) thread, as they are to a window.
    QObject receiver;
    QList<RunScan> results;
    connect(thread.worker(), &RunCatalogWorker::scanned, &receiver,
            [&results](const RunScan& scan) { results.push_back(scan); });
    QMetaObject::invokeMethod(thread.worker(), "scan", Qt::QueuedConnection, Q_ARG(QString, root_->path()));
    QTRY_COMPARE_WITH_TIMEOUT(results.size(), 1, 5000);
    QVERIFY(emittedOn.load() != nullptr);
    QVERIFY(emittedOn.load() != QThread::currentThread());
    QCOMPARE(results[0].root, root_->path());
    QCOMPARE(results[0].runs.size(), 4);
    QVERIFY(!results[0].cancelled);

    // cancel() affects only a scan in progress: a later request runs fully.
    thread.worker()->cancel();
    QMetaObject::invokeMethod(thread.worker(), "scan", Qt::QueuedConnection, Q_ARG(QString, root_->path()));
    QTRY_COMPARE_WITH_TIMEOUT(results.size(), 2, 5000);
    QCOMPARE(results[1].runs.size(), 4);
  }

 private:
  std::unique_ptr<QTemporaryDir> root_;
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::RunCatalogTest)
#include "run_catalog_test.moc"
