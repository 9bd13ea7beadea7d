// 100 forced disconnects while a run's events are followed over SSH: the sshd
// sessions killed, the host's link set down until the client notices and up again,
// sshd restarted — in turn. The follower (RunFollower through HostRunDir over an
// SshHost) must lose no event and repeat none; the recovery time of each
// disconnect is printed (a figure, not a threshold: tests are not timed).
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cstdio>

#include "app/monitor/host_file_source.h"
#include "tests/app/cluster/follow_recorder.h"
#include "tests/app/cluster/ssh_test_util.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::app::cluster {

namespace {

constexpr int kWaitMs = 120'000;
constexpr int kDisconnects = 100;

}  // namespace

class SshDisconnectTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    hosts_ = std::make_unique<fs::testing::SshHosts>(2);
    if (!hosts_->ok()) FS_QT_FIXTURE_UNAVAILABLE("sshd hosts in network namespaces: " + hosts_->error());
    QVERIFY(dir_.isValid());
  }
  void cleanupTestCase() { hosts_.reset(); }

  void hundredDisconnectsLoseAndRepeatNothing() {
    const std::string runDir = dir_.path().toStdString();
    QProcess writer;
    writer.setProcessChannelMode(QProcess::ForwardedChannels);
    writer.start(QStringLiteral(FS_EVENT_WRITER), {dir_.path(), QStringLiteral("20")});
    QVERIFY(writer.waitForStarted());
    test::SshOpener opener(*hosts_, /*keepaliveS=*/1);
    const std::string alias = hosts_->alias(0);
    auto host = opener.open(alias);
    QVERIFY2(host.isOk(), host.isOk() ? "" : host.status().message().c_str());
    test::FollowRecorder follow(std::make_shared<HostRunDir>(*host.value(), runDir));
    QTRY_VERIFY_WITH_TIMEOUT(follow.seqs.size() > 10, kWaitMs);

    const char* kinds[] = {"sshd sessions killed", "link down until noticed, then up", "sshd restarted"};
    std::vector<double> recovery;
    for (int i = 0; i < kDisconnects; ++i) {
      const int kind = i % 3;
      const std::size_t before = follow.seqs.size();
      QElapsedTimer clock;
      clock.start();
      if (kind == 0) {
        QVERIFY2(hosts_->killSessions(0), hosts_->error().c_str());
      } else if (kind == 1) {
        QVERIFY2(hosts_->setLinkDown(0), hosts_->error().c_str());
        // The client notices through its keepalive (or a read timing out): the
        // follower reports the read error, or the host says it is disconnected.
        const std::size_t issuesBefore = follow.issues.size();
        QTRY_VERIFY_WITH_TIMEOUT(!host.value()->connected() || follow.issues.size() > issuesBefore, kWaitMs);
        QVERIFY2(hosts_->setLinkUp(0), hosts_->error().c_str());
      } else {
        QVERIFY2(hosts_->restartSshd(0), hosts_->error().c_str());
      }
      // Recovered: events written after the disconnect arrive again.
      QTRY_VERIFY_WITH_TIMEOUT(follow.seqs.size() > before + 5, kWaitMs);
      recovery.push_back(static_cast<double>(clock.elapsed()) / 1000.0);
      std::printf("disconnect %3d (%s): events again after %.2f s\n", i + 1, kinds[kind], recovery.back());
      std::fflush(stdout);
    }
    {
      QFile stop(dir_.filePath(QStringLiteral("stop")));
      QVERIFY(stop.open(QIODevice::WriteOnly));
    }
    QTRY_VERIFY_WITH_TIMEOUT(follow.finished, kWaitMs);
    if (writer.state() != QProcess::NotRunning) QVERIFY(writer.waitForFinished(kWaitMs));  // false once ended
    QCOMPARE(writer.exitCode(), 0);
    QString why;
    QVERIFY2(follow.seqsComplete(&why), qPrintable(why));
    const auto written = test::readEvents(dir_.path());
    QCOMPARE(follow.seqs.size(), written.size());  // every event written arrived, once
    std::sort(recovery.begin(), recovery.end());
    std::printf("%d disconnects: recovery median %.2f s, max %.2f s; %zu events, 0 lost, 0 repeated\n",
                kDisconnects, recovery[recovery.size() / 2], recovery.back(), written.size());
  }

 private:
  std::unique_ptr<fs::testing::SshHosts> hosts_;
  QTemporaryDir dir_{QStringLiteral("/tmp/fs-ssh-disconnects-XXXXXX")};
};

}  // namespace fs::app::cluster

QTEST_GUILESS_MAIN(fs::app::cluster::SshDisconnectTest)
#include "ssh_disconnect_test.moc"
