// RunControlBar through a scripted sequence of clicks and acks: which buttons
// are enabled, the Pause/Resume toggle, the files the clicks write, and the
// inline messages for pending, refused, timed-out and failed commands. The
// acks are handed in as the live monitor will hand them; time is a fake clock.
#include "ui/control/run_control_bar.h"

#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "backend/protocol/wire/control_file.h"
#include "tests/app/control/control_test_util.h"

namespace fs::ui {
namespace {

namespace proto = fs::protocol;
using app::ControlClient;

}  // namespace

class RunControlBarTest : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    tmp_ = std::make_unique<QTemporaryDir>();
    QVERIFY(tmp_->isValid());
    runDir_ = tmp_->filePath(QStringLiteral("run"));
    QVERIFY(proto::RunDir(app::test::fsPath(runDir_)).create().isOk());
    client_ = std::make_unique<ControlClient>([this] { return now_; });
    bar_ = std::make_unique<RunControlBar>(client_.get());
    bar_->show();
    written_ = std::make_unique<QSignalSpy>(client_.get(), &ControlClient::commandWritten);
  }
  void cleanup() {
    written_.reset();
    bar_.reset();
    client_.reset();
  }

  void nothingIsEnabledWithoutARun() {
    QCOMPARE(enabled(), QStringLiteral("----"));
    client_->setRunDir(runDir_);
    QCOMPARE(enabled(), QStringLiteral("SPCK"));
    QCOMPARE(bar_->pauseResumeButton()->text(), QStringLiteral("Pause"));
    client_->setRunState(proto::RunState::kFailed);
    QCOMPARE(enabled(), QStringLiteral("----"));
  }

  void scriptedSequence() {
    client_->setRunDir(runDir_);
    client_->setRunState(proto::RunState::kRunning);

    // Pause: the toggle waits for the ack, the rest stays usable.
    click(bar_->pauseResumeButton());
    QCOMPARE(enabled(), QStringLiteral("S-CK"));
    QTRY_COMPARE_WITH_TIMEOUT(written_->count(), 1, 30000);
    QVERIFY(QFileInfo::exists(runDir_ + QStringLiteral("/control/1-pause.json")));
    QCOMPARE(bar_->message(), QStringLiteral("Pause sent; waiting for the run to acknowledge it"));
    client_->onAck(app::test::ack(1, "pause", true, 4));
    QCOMPARE(enabled(), QStringLiteral("SPCK"));
    QCOMPARE(bar_->pauseResumeButton()->text(), QStringLiteral("Resume"));
    QCOMPARE(bar_->message(), QStringLiteral("Pause done at step 4"));

    // Resume, the same way back.
    click(bar_->pauseResumeButton());
    QCOMPARE(enabled(), QStringLiteral("S-CK"));
    QTRY_COMPARE_WITH_TIMEOUT(written_->count(), 2, 30000);
    QVERIFY(QFileInfo::exists(runDir_ + QStringLiteral("/control/2-resume.json")));
    client_->onAck(app::test::ack(2, "resume", true, 4));
    QCOMPARE(bar_->pauseResumeButton()->text(), QStringLiteral("Pause"));

    // Checkpoint refused: said in red, and the button comes back.
    click(bar_->checkpointButton());
    QCOMPARE(enabled(), QStringLiteral("SP-K"));
    QTRY_COMPARE_WITH_TIMEOUT(written_->count(), 3, 30000);
    client_->onAck(app::test::ack(3, "checkpoint", false, 6, "checkpoint.dir is not writable"));
    QCOMPARE(enabled(), QStringLiteral("SPCK"));
    QCOMPARE(bar_->message(),
             QStringLiteral("Checkpoint refused by the run: checkpoint.dir is not writable"));
    QVERIFY(messageLabel()->styleSheet().contains(QStringLiteral("#b3261e")));

    // Checkpoint never answered: the timeout says so inline.
    click(bar_->checkpointButton());
    QTRY_COMPARE_WITH_TIMEOUT(written_->count(), 4, 30000);
    now_ += ControlClient::kDefaultTimeoutMs;
    client_->checkTimeouts();
    QVERIFY2(bar_->message().startsWith(QStringLiteral("checkpoint (control file 4-checkpoint.json) was not "
                                                       "acknowledged within 10 s")),
             qPrintable(bar_->message()));
    QCOMPARE(enabled(), QStringLiteral("SPCK"));

    // Stop: with a checkpoint first; only Kill is left, also once acknowledged.
    click(bar_->stopButton());
    QCOMPARE(enabled(), QStringLiteral("---K"));
    QTRY_COMPARE_WITH_TIMEOUT(written_->count(), 5, 30000);
    const auto listing = proto::listControl(app::test::fsPath(runDir_));
    QVERIFY(listing.isOk());
    QVERIFY(listing->pending.back().command.verb == proto::ControlVerb::kStop);
    QCOMPARE(listing->pending.back().command.args.value("checkpoint", false), true);
    client_->onAck(app::test::ack(5, "stop", true, 7));
    QCOMPARE(enabled(), QStringLiteral("---K"));

    // Kill while stopping; then the run is over and nothing is left to press.
    click(bar_->killButton());
    QCOMPARE(enabled(), QStringLiteral("----"));
    QTRY_COMPARE_WITH_TIMEOUT(written_->count(), 6, 30000);
    QVERIFY(QFileInfo::exists(runDir_ + QStringLiteral("/control/6-kill.json")));
    client_->setRunState(proto::RunState::kFinished);
    QCOMPARE(enabled(), QStringLiteral("----"));
  }

  void killLooksDifferent() {
    client_->setRunDir(runDir_);
    // Drawn, not just styled: Kill is largely red (its text and margins are not), Stop has no red at all.
    QVERIFY2(redShare(bar_->killButton()) > 0.2, qPrintable(QString::number(redShare(bar_->killButton()))));
    QCOMPARE(redShare(bar_->stopButton()), 0.0);
    QCOMPARE(bar_->killButton()->toolTip(), QStringLiteral("Abort now, without a checkpoint"));
  }

  void writeFailureIsShownInline() {
    const QString bare = tmp_->filePath(QStringLiteral("bare"));
    QVERIFY(QDir().mkpath(bare));  // no control/ inside
    client_->setRunDir(bare);
    click(bar_->pauseResumeButton());
    QTRY_VERIFY_WITH_TIMEOUT(bar_->message().startsWith(QStringLiteral("cannot send pause: ")), 30000);
    QVERIFY2(bar_->message().contains(bare + QStringLiteral("/control")), qPrintable(bar_->message()));
    QCOMPARE(enabled(), QStringLiteral("SPCK"));
  }

 private:
  // One letter per button, '-' when disabled: Stop, Pause/Resume, Checkpoint, Kill.
  QString enabled() const {
    QString s;
    s += bar_->stopButton()->isEnabled() ? QLatin1Char('S') : QLatin1Char('-');
    s += bar_->pauseResumeButton()->isEnabled() ? QLatin1Char('P') : QLatin1Char('-');
    s += bar_->checkpointButton()->isEnabled() ? QLatin1Char('C') : QLatin1Char('-');
    s += bar_->killButton()->isEnabled() ? QLatin1Char('K') : QLatin1Char('-');
    return s;
  }
  static void click(QPushButton* b) {
    QVERIFY2(b->isEnabled(), qPrintable(b->objectName()));
    QTest::mouseClick(b, Qt::LeftButton);
  }
  // Share of the button's pixels that are strongly red.
  static double redShare(QWidget* w) {
    const QImage image = w->grab().toImage();
    qint64 red = 0;
    for (int y = 0; y < image.height(); ++y) {
      for (int x = 0; x < image.width(); ++x) {
        const QColor c = image.pixelColor(x, y);
        red += c.red() > 150 && c.green() < 90 && c.blue() < 90;
      }
    }
    return image.isNull() ? 0.0 : double(red) / (double(image.width()) * image.height());
  }
  QLabel* messageLabel() const { return bar_->findChild<QLabel*>(QStringLiteral("controlMessage")); }

  std::unique_ptr<QTemporaryDir> tmp_;
  QString runDir_;
  qint64 now_ = 5'000;
  std::unique_ptr<ControlClient> client_;
  std::unique_ptr<RunControlBar> bar_;
  std::unique_ptr<QSignalSpy> written_;
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::RunControlBarTest)
#include "run_control_bar_test.moc"
