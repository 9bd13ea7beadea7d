// ControlClient on a real run directory without an engine: the control files
// it writes are what the engine's reader accepts, acks are matched by seq and
// verb (also one read before the writer's answer, and a late one), two clients at
// once get distinct seqs and their own outcomes, timeouts come from an injected
// clock, and a late ack still counts.
#include "app/control/control_client.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <set>

#include "backend/protocol/wire/control_file.h"
#include "control_test_util.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;

}  // namespace

class ControlClientTest : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    tmp_ = std::make_unique<QTemporaryDir>();
    QVERIFY(tmp_->isValid());
    runDir_ = tmp_->filePath(QStringLiteral("run"));
    QVERIFY(proto::RunDir(test::fsPath(runDir_)).create().isOk());
    now_ = 1'000;
    client_ = std::make_unique<ControlClient>([this] { return now_; });
    client_->setRunDir(runDir_);
  }
  void cleanup() { client_.reset(); }

  void writesCommandsTheEngineAccepts() {
    QSignalSpy written(client_.get(), &ControlClient::commandWritten);
    client_->pause();
    client_->stop(/*checkpoint=*/true);
    client_->stop(/*checkpoint=*/false);
    QTRY_COMPARE_WITH_TIMEOUT(written.count(), 3, 30000);
    const auto listing = proto::listControl(test::fsPath(runDir_));
    QVERIFY(listing.isOk());
    QVERIFY(listing->rejected.empty());
    QCOMPARE(listing->pending.size(), std::size_t{3});
    QVERIFY(listing->pending[0].command.verb == proto::ControlVerb::kPause);
    QCOMPARE(listing->pending[1].command.args.value("checkpoint", false), true);
    QCOMPARE(listing->pending[2].command.args.value("checkpoint", true), false);
    QCOMPARE(listing->pending[0].command.issuer, proto::currentUserName());
    QCOMPARE(written.at(0).at(0).value<ControlRequest>().seq, quint64{1});
    QCOMPARE(written.at(2).at(0).value<ControlRequest>().seq, quint64{3});
    QCOMPARE(client_->pending().size(), 3);
  }

  void acksCompleteTheirCommandAndMoveTheState() {
    QSignalSpy written(client_.get(), &ControlClient::commandWritten);
    QSignalSpy acked(client_.get(), &ControlClient::acknowledged);
    client_->pause();
    QVERIFY(client_->isPending(proto::ControlVerb::kPause));
    QTRY_COMPARE_WITH_TIMEOUT(written.count(), 1, 30000);
    client_->onAck(test::ack(99, "checkpoint"));  // someone else's: ignored
    QCOMPARE(acked.count(), 0);
    client_->onAck(test::ack(1, "pause", true, 12));
    QCOMPARE(acked.count(), 1);
    QVERIFY(acked.at(0).at(0).value<ControlRequest>().verb == proto::ControlVerb::kPause);
    QCOMPARE(acked.at(0).at(1).toBool(), true);
    QCOMPARE(acked.at(0).at(3).toLongLong(), 12);
    QVERIFY(client_->pending().isEmpty());
    QVERIFY(client_->isPaused());

    client_->resume();
    QTRY_COMPARE_WITH_TIMEOUT(written.count(), 2, 30000);
    client_->onAck(test::ack(2, "resume"));
    QVERIFY(!client_->isPaused());
    QVERIFY(client_->runState() == proto::RunState::kRunning);
  }

  void refusedAckKeepsTheState() {
    QSignalSpy written(client_.get(), &ControlClient::commandWritten);
    QSignalSpy acked(client_.get(), &ControlClient::acknowledged);
    client_->setRunState(proto::RunState::kRunning);
    client_->pause();
    QTRY_COMPARE_WITH_TIMEOUT(written.count(), 1, 30000);
    client_->onAck(test::ack(1, "pause", false, 3, "issued before this attempt started"));
    QCOMPARE(acked.count(), 1);
    QCOMPARE(acked.at(0).at(1).toBool(), false);
    QCOMPARE(acked.at(0).at(2).toString(), QStringLiteral("issued before this attempt started"));
    QVERIFY(!client_->isPaused());
  }

  void ackReadBeforeTheWriterAnswersStillMatches() {
    QSignalSpy written(client_.get(), &ControlClient::commandWritten);
    QSignalSpy acked(client_.get(), &ControlClient::acknowledged);
    client_->checkpoint();
    // The writer's answer is queued to this thread and cannot have arrived yet.
    client_->onAck(test::ack(1, "checkpoint", true, 5));
    QCOMPARE(acked.count(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(acked.count(), 1, 30000);
    QCOMPARE(written.count(), 1);
    QCOMPARE(acked.at(0).at(0).value<ControlRequest>().seq, quint64{1});
    QVERIFY(client_->pending().isEmpty());
  }

  // An older client without seq claims can write another verb under our seq; the
  // engine acts on both and acks both. Only the ack with our verb is ours.
  void ackWithOurSeqButAnotherVerbIsNotOurs() {
    QSignalSpy written(client_.get(), &ControlClient::commandWritten);
    QSignalSpy acked(client_.get(), &ControlClient::acknowledged);
    client_->pause();
    QTRY_COMPARE_WITH_TIMEOUT(written.count(), 1, 30000);
    QCOMPARE(written.at(0).at(0).value<ControlRequest>().seq, quint64{1});
    client_->onAck(test::ack(1, "checkpoint", false, 4, "disk full"));
    QCOMPARE(acked.count(), 0);
    QVERIFY(client_->isPending(proto::ControlVerb::kPause));
    client_->onAck(test::ack(1, "pause", true, 5, "paused after step 5"));
    QCOMPARE(acked.count(), 1);
    QVERIFY(acked.at(0).at(0).value<ControlRequest>().verb == proto::ControlVerb::kPause);
    QCOMPARE(acked.at(0).at(1).toBool(), true);
    QCOMPARE(acked.at(0).at(2).toString(), QStringLiteral("paused after step 5"));
  }

  // The same before the writer answers, and after a timeout.
  void earlyAndLateAcksAreMatchedByVerbToo() {
    QSignalSpy written(client_.get(), &ControlClient::commandWritten);
    QSignalSpy acked(client_.get(), &ControlClient::acknowledged);
    QSignalSpy timedOut(client_.get(), &ControlClient::timedOut);
    client_->checkpoint();
    client_->onAck(test::ack(1, "kill", true, 2, "stopping now without a checkpoint"));
    client_->onAck(test::ack(1, "checkpoint", true, 3, "checkpoint written"));
    QTRY_COMPARE_WITH_TIMEOUT(acked.count(), 1, 30000);
    QCOMPARE(acked.at(0).at(2).toString(), QStringLiteral("checkpoint written"));
    QCOMPARE(acked.at(0).at(3).toLongLong(), 3);

    client_->resume();
    QTRY_COMPARE_WITH_TIMEOUT(written.count(), 2, 30000);
    const quint64 seq = written.at(1).at(0).value<ControlRequest>().seq;
    QCOMPARE(seq, quint64{2});
    now_ += ControlClient::kDefaultTimeoutMs;
    client_->checkTimeouts();
    QCOMPARE(timedOut.count(), 1);
    client_->onAck(test::ack(seq, "stop", false, 9, "rejected"));
    QCOMPARE(acked.count(), 1);
    client_->onAck(test::ack(seq, "resume", true, 9, "resumed"));
    QCOMPARE(acked.count(), 2);
    QCOMPARE(acked.at(1).at(2).toString(), QStringLiteral("resumed"));
  }

  // Two clients (two windows, or the GUI and the CLI) sending different verbs to one
  // run at once, many times: every command gets its own seq, nothing is rejected, and
  // each client's acks report its own commands' outcomes.
  void twoClientsAtOnceEachGetTheirOwnOutcome() {
    ControlClient other([this] { return now_; });
    other.setRunDir(runDir_);
    QSignalSpy writtenA(client_.get(), &ControlClient::commandWritten);
    QSignalSpy writtenB(&other, &ControlClient::commandWritten);
    QSignalSpy ackedA(client_.get(), &ControlClient::acknowledged);
    QSignalSpy ackedB(&other, &ControlClient::acknowledged);
    constexpr int kEach = 30;
    for (int i = 0; i < kEach; ++i) {
      client_->pause();
      other.checkpoint();
    }
    QTRY_COMPARE_WITH_TIMEOUT(writtenA.count(), kEach, 60000);
    QTRY_COMPARE_WITH_TIMEOUT(writtenB.count(), kEach, 60000);
    // The engine's part: every pending command acted on and acknowledged, the
    // outcome telling the verbs apart (pauses succeed, checkpoints fail).
    const auto listing = proto::listControl(test::fsPath(runDir_));
    QVERIFY(listing.isOk());
    QVERIFY2(listing->rejected.empty(),
             listing->rejected.empty() ? "" : listing->rejected[0].reason.message().c_str());
    QCOMPARE(listing->pending.size(), std::size_t{2 * kEach});
    std::set<quint64> seqs;
    for (const auto& p : listing->pending) {
      QVERIFY2(seqs.insert(p.command.seq).second,
               qPrintable(QStringLiteral("seq %1 twice").arg(p.command.seq)));
      const bool pause = p.command.verb == proto::ControlVerb::kPause;
      const auto a = test::ack(p.command.seq, pause ? "pause" : "checkpoint", pause, 7,
                               pause ? "paused" : "checkpoint failed");
      client_->onAck(a);
      other.onAck(a);
    }
    QCOMPARE(ackedA.count(), kEach);
    QCOMPARE(ackedB.count(), kEach);
    for (const auto& args : ackedA) {
      QVERIFY(args.at(0).value<ControlRequest>().verb == proto::ControlVerb::kPause);
      QCOMPARE(args.at(1).toBool(), true);
      QCOMPARE(args.at(2).toString(), QStringLiteral("paused"));
    }
    for (const auto& args : ackedB) {
      QVERIFY(args.at(0).value<ControlRequest>().verb == proto::ControlVerb::kCheckpoint);
      QCOMPARE(args.at(1).toBool(), false);
      QCOMPARE(args.at(2).toString(), QStringLiteral("checkpoint failed"));
    }
    QVERIFY(client_->pending().isEmpty());
    QVERIFY(other.pending().isEmpty());
  }

  void timesOutByTheInjectedClockAndTakesALateAck() {
    QSignalSpy written(client_.get(), &ControlClient::commandWritten);
    QSignalSpy timedOut(client_.get(), &ControlClient::timedOut);
    QSignalSpy acked(client_.get(), &ControlClient::acknowledged);
    client_->pause();
    QTRY_COMPARE_WITH_TIMEOUT(written.count(), 1, 30000);
    now_ += ControlClient::kDefaultTimeoutMs - 1;
    client_->checkTimeouts();
    QCOMPARE(timedOut.count(), 0);
    QVERIFY(client_->isPending(proto::ControlVerb::kPause));
    now_ += 1;
    client_->checkTimeouts();
    QCOMPARE(timedOut.count(), 1);
    const QString message = timedOut.at(0).at(1).toString();
    QVERIFY2(message.contains(
                 QStringLiteral("pause (control file 1-pause.json) was not acknowledged within 10 s")),
             qPrintable(message));
    QVERIFY(!client_->isPending(proto::ControlVerb::kPause));
    client_->checkTimeouts();
    QCOMPARE(timedOut.count(), 1);  // once

    client_->onAck(test::ack(1, "pause"));
    QCOMPARE(acked.count(), 1);
    QVERIFY(client_->isPaused());
  }

  void timeoutAfterTheRunEndedSaysSo() {
    QSignalSpy written(client_.get(), &ControlClient::commandWritten);
    QSignalSpy timedOut(client_.get(), &ControlClient::timedOut);
    client_->setTimeoutMs(2'500);
    client_->checkpoint();
    QTRY_COMPARE_WITH_TIMEOUT(written.count(), 1, 30000);
    client_->setRunState(proto::RunState::kFinished);
    now_ += 2'500;
    client_->checkTimeouts();
    QCOMPARE(timedOut.count(), 1);
    const QString message = timedOut.at(0).at(1).toString();
    QVERIFY2(message.contains(QStringLiteral("within 2.5 s")) &&
                 message.contains(QStringLiteral("the run has ended")),
             qPrintable(message));
  }

  void unwritableControlDirectoryFails() {
    const QString bare = tmp_->filePath(QStringLiteral("bare"));
    QVERIFY(QDir().mkpath(bare));  // no control/ inside
    client_->setRunDir(bare);
    QSignalSpy failed(client_.get(), &ControlClient::commandFailed);
    client_->kill();
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);
    const QString message = failed.at(0).at(1).toString();
    QVERIFY2(message.startsWith(QStringLiteral("cannot send kill: ")) &&
                 message.contains(bare + QStringLiteral("/control")),
             qPrintable(message));
    QVERIFY(client_->pending().isEmpty());
  }

  void noRunNoCommand() {
    client_->setRunDir({});
    QSignalSpy failed(client_.get(), &ControlClient::commandFailed);
    QCOMPARE(client_->stop(), quint64{0});
    QCOMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(1).toString().contains(QStringLiteral("no run is attached")));
  }

  void anotherRunForgetsPendingCommands() {
    QSignalSpy written(client_.get(), &ControlClient::commandWritten);
    client_->pause();
    client_->onAck(test::ack(40, "pause"));  // moves the derived state
    QVERIFY(client_->isPaused());
    const QString other = tmp_->filePath(QStringLiteral("other"));
    QVERIFY(proto::RunDir(test::fsPath(other)).create().isOk());
    client_->setRunDir(other);
    QVERIFY(client_->pending().isEmpty());
    QVERIFY(!client_->runState().has_value());
    // The first run's file is still written, but its answer is not ours any
    // more: requests run in order, so once the second run's command is written
    // the first one's answer has been delivered (and dropped).
    client_->checkpoint();
    QTRY_COMPARE_WITH_TIMEOUT(written.count(), 1, 30000);
    QVERIFY(written.at(0).at(0).value<ControlRequest>().verb == proto::ControlVerb::kCheckpoint);
    QVERIFY(QFileInfo::exists(runDir_ + QStringLiteral("/control/1-pause.json")));
    QVERIFY(QFileInfo::exists(other + QStringLiteral("/control/1-checkpoint.json")));
    QCOMPARE(client_->pending().size(), 1);
  }

 private:
  std::unique_ptr<QTemporaryDir> tmp_;
  QString runDir_;
  qint64 now_ = 0;
  std::unique_ptr<ControlClient> client_;
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::ControlClientTest)
#include "control_client_test.moc"
