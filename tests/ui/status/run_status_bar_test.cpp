// RunStatusBar: the text shown for given RunStatus values; the units helpers
// it and the other views format with.
#include "ui/status/run_status_bar.h"

#include <QLabel>
#include <QtTest>
#include <cmath>

#include "../screenshot.h"
#include "ui/plots/format_units.h"

namespace fs::ui {

class RunStatusBarTest : public QObject {
  Q_OBJECT
 private slots:
  void runningWithEverythingKnown() {
    RunStatusBar bar;
    bar.setStatus({MonitorState::kRunning, 1250, 10000, 532.4, 5025.0});
    QCOMPARE(
        bar.text(),
        QStringLiteral("running \u00b7 Step 1,250 / 10,000 (12.5%) \u00b7 532 samples/s \u00b7 ETA 1:23:45"));
    QCOMPARE(bar.findChild<QLabel*>(QStringLiteral("runEta"))->text(), QStringLiteral("ETA 1:23:45"));
    QVERIFY(saveScreenshot(bar, QStringLiteral("run_status_bar.png")));
    QVERIFY(bar.findChild<QLabel*>(QStringLiteral("runState"))
                ->styleSheet()
                .contains(stateColor(MonitorState::kRunning)));
  }

  void startingWithNothingKnown() {
    RunStatusBar bar;
    QCOMPARE(bar.text(), QStringLiteral("starting \u00b7 Step 0 \u00b7 - samples/s \u00b7 ETA -"));
  }

  void longRunsAndSlowRates() {
    RunStatusBar bar;
    bar.setStatus({MonitorState::kStalled, 7, 1'000'000, 3.14159, 27 * 3600 + 3 * 60 + 4.4});
    QCOMPARE(bar.stepText(), QStringLiteral("Step 7 / 1,000,000 (0.0%)"));
    QCOMPARE(bar.rateText(), QStringLiteral("3.14 samples/s"));
    QCOMPARE(bar.etaText(), QStringLiteral("ETA 27:03:04"));
    QCOMPARE(bar.stateLabelText(), QStringLiteral("stalled"));
  }

  void finishedAndFailedHaveNoEta() {
    RunStatusBar bar;
    bar.setStatus({MonitorState::kFinished, 100, 100, 12.0, 0.0});
    QCOMPARE(bar.text(),
             QStringLiteral("finished \u00b7 Step 100 / 100 (100.0%) \u00b7 12.0 samples/s \u00b7 ETA -"));
    bar.setStatus({MonitorState::kFailed, 40, 100, std::nullopt, 60.0});
    QCOMPARE(bar.text(),
             QStringLiteral("failed \u00b7 Step 40 / 100 (40.0%) \u00b7 - samples/s \u00b7 ETA -"));
  }

  void everyStateHasItsOwnWordAndColour() {
    QSet<QString> words, colours;
    for (auto s :
         {MonitorState::kStarting, MonitorState::kRunning, MonitorState::kPaused, MonitorState::kStalled,
          MonitorState::kStopping, MonitorState::kFinished, MonitorState::kFailed}) {
      words.insert(stateText(s));
      colours.insert(stateColor(s));
    }
    QCOMPARE(words.size(), 7);
    QVERIFY(colours.size() >= 6);  // starting and stopping share the "in transition" blue
    QVERIFY(stateColor(MonitorState::kFailed) != stateColor(MonitorState::kRunning));
    QVERIFY(stateColor(MonitorState::kStalled) != stateColor(MonitorState::kRunning));
  }

  void unitFormats() {
    QCOMPARE(formatBytes(0), QStringLiteral("0 B"));
    QCOMPARE(formatBytes(1023), QStringLiteral("1023 B"));
    QCOMPARE(formatBytes(1536), QStringLiteral("1.50 KiB"));
    QCOMPARE(formatBytes(1024 * 1024 - 1), QStringLiteral("1.00 MiB"));
    QCOMPARE(formatBytes(std::int64_t(80) << 30), QStringLiteral("80.0 GiB"));
    QCOMPARE(formatBytes(-2048), QStringLiteral("-2.00 KiB"));
    QCOMPARE(formatCount(950), QStringLiteral("950"));
    QCOMPARE(formatCount(12'345), QStringLiteral("12.3 K"));
    QCOMPARE(formatCount(6'740'000'000), QStringLiteral("6.74 B"));
    QCOMPARE(formatCount(999'999), QStringLiteral("1.00 M"));
    QCOMPARE(formatDuration(0), QStringLiteral("0:00:00"));
    QCOMPARE(formatDuration(59.6), QStringLiteral("0:01:00"));
    QCOMPARE(formatDuration(std::nan("")), QStringLiteral("-"));
    QCOMPARE(formatInteger(-1234567), QStringLiteral("-1,234,567"));
    QCOMPARE(formatInteger(std::numeric_limits<std::int64_t>::min()),
             QStringLiteral("-9,223,372,036,854,775,808"));
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::RunStatusBarTest)
#include "run_status_bar_test.moc"
