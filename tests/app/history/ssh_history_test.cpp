// The history over real SSH: a run directory read through a HostRunDir on an
// SshHost (SFTP to an sshd in a network namespace, tests/fixtures/ssh_hosts.h)
// gives the record the local reader gives, and HistoryWorker records it with
// the alias it was reached through. The fixture shares this machine's files,
// so the same folder is read both ways. Without the fixture (no root, no sshd)
// the test skips, and fails under CI=true.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>

#include "app/common/worker_thread.h"
#include "app/history/history_worker.h"
#include "app/history/run_dir_reader.h"
#include "app/monitor/host_file_source.h"
#include "app/remote/prompter.h"
#include "app/remote/ssh_config.h"
#include "app/remote/ssh_host.h"
#include "tests/app/history/run_dir_fixture.h"
#include "tests/app/history/worker_signals.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/ssh_hosts.h"

namespace fs::app {
namespace {

// The fixture's known_hosts holds every key and its keys have no passphrase: nobody is asked.
class NobodyAsked : public remote::Prompter {
 public:
  remote::HostKeyAnswer hostKey(const remote::HostKeyQuestion&) override {
    return remote::HostKeyAnswer::kReject;
  }
  std::optional<remote::Secret> passphrase(const std::string&, int) override { return std::nullopt; }
};

}  // namespace

class SshHistoryTest : public QObject {
  Q_OBJECT

 private slots:
  void aRunDirOverSftpIsRecordedWithItsHost() {
    fs::testing::SshHosts hosts(2);
    if (!hosts.ok()) FS_QT_FIXTURE_UNAVAILABLE("sshd hosts: " + hosts.error());
    remote::SshConfigOptions options;
    options.user_config = hosts.configPath();
    options.system_config.clear();
    auto config = remote::SshConfig::load(options);
    QVERIFY2(config.isOk(), config.status().message().c_str());
    const std::string alias = hosts.alias(0);
    auto opened = remote::SshHost::open(alias, std::move(config.value()), std::make_shared<NobodyAsked>());
    QVERIFY2(opened.isOk(), opened.status().message().c_str());
    std::shared_ptr<remote::Host> host = std::move(opened.value());

    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    test::FixtureRun run = test::finishedRun("id-ssh", 1'700'000'000'000, 300);
    run.extraEventText = "{not json\n";
    const QString dir = test::writeRunDir(tmp.path(), QStringLiteral("run-over-ssh"), run);
    auto local = readRunDirectory(dir);
    QVERIFY2(local.isOk(), local.status().message().c_str());
    HostRunDir source(*host, dir.toStdString());
    RunDirReadOptions readOptions;
    readOptions.chunkBytes = 4096;  // several SFTP reads
    auto remoteRead = readRunDirectory(source, dir, readOptions);
    QVERIFY2(remoteRead.isOk(), remoteRead.status().message().c_str());
    QCOMPARE(remoteRead->record, local->record);
    QCOMPARE(remoteRead->badLines, 1);

    WorkerThread<HistoryWorker> thread(new HistoryWorker, QStringLiteral("history"));
    HistoryWorker mirror;
    test::mirrorSignals(thread.worker(), &mirror);
    HistoryWorker* worker = thread.worker();
    QSignalSpy openedDb(&mirror, &HistoryWorker::opened);
    const QString db = tmp.filePath(QStringLiteral("history.sqlite"));
    QMetaObject::invokeMethod(worker, [worker, db] { worker->open(db); });
    QVERIFY(openedDb.wait(10'000));
    const QString location = QString::fromStdString(alias);
    QSignalSpy imported(&mirror, &HistoryWorker::imported);
    QSignalSpy failed(&mirror, &HistoryWorker::importFailed);
    std::shared_ptr<RunDirSource> shared = hostRunDir(host, dir.toStdString());
    QMetaObject::invokeMethod(worker, [=] { worker->importRunDirFrom(shared, dir, location); });
    QVERIFY(imported.wait(30'000));
    const RunRecord r = imported[0].at(0).value<RunRecord>();
    QCOMPARE(r.location, location);
    QCOMPARE(r.where(), location + QLatin1Char(':') + dir);
    QCOMPARE(r.lastStep, 300);

    // A folder that is not there: named with the host.
    const QString missing = tmp.filePath(QStringLiteral("no-such-run"));
    std::shared_ptr<RunDirSource> gone = hostRunDir(host, missing.toStdString());
    QMetaObject::invokeMethod(worker, [=] { worker->importRunDirFrom(gone, missing, location); });
    QVERIFY(failed.wait(30'000));
    QCOMPARE(failed[0].at(0).toString(), location + QLatin1Char(':') + missing);
    QVERIFY2(failed[0].at(1).toString().contains(location + QLatin1Char(':') + missing),
             qPrintable(failed[0].at(1).toString()));
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::SshHistoryTest)
#include "ssh_history_test.moc"
