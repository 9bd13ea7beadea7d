// LogView: filters by rank, level and text, alone and combined; batched
// appends; the cap on kept lines; warnings and errors highlighted.
#include "ui/logs/log_view.h"

#include <QBrush>
#include <QComboBox>
#include <QLineEdit>
#include <QtTest>

#include "../screenshot.h"

namespace fs::ui {
namespace {

namespace proto = fs::protocol;

// 4 ranks x 25 lines; every 5th a warning, every 10th (instead) an error;
// "loss" in the even lines' text.
std::vector<LogLine> sampleLines() {
  std::vector<LogLine> lines;
  for (int i = 0; i < 100; ++i) {
    LogLine l;
    l.rank = i % 4;
    l.level = i % 10 == 0 ? LogLevel::kError : i % 5 == 0 ? LogLevel::kWarning : LogLevel::kInfo;
    l.text = QStringLiteral("line %1 %2")
                 .arg(i)
                 .arg(i % 2 == 0 ? QStringLiteral("loss ok") : QStringLiteral("data"));
    lines.push_back(l);
  }
  return lines;
}

// The brute-force count of what a filter should keep.
int expected(std::optional<int> rank, bool info, bool warning, bool error, const QString& text) {
  int n = 0;
  for (const auto& l : sampleLines()) {
    const bool level = l.level == LogLevel::kInfo ? info : l.level == LogLevel::kWarning ? warning : error;
    if (level && (!rank || *rank == l.rank) && (text.isEmpty() || l.text.contains(text, Qt::CaseInsensitive)))
      ++n;
  }
  return n;
}

}  // namespace

class LogViewTest : public QObject {
  Q_OBJECT
 private slots:
  void appendsAreBatchedUntilFlush() {
    LogView view;
    view.appendLines(sampleLines());
    view.appendLine({0, 7, LogLevel::kInfo, QStringLiteral("late"), {}});
    QCOMPARE(view.totalCount(), 0);  // queued: shown at the next tick
    view.flush();
    QCOMPARE(view.totalCount(), 101);
    QCOMPARE(view.shownCount(), 101);
    // Ranks seen fill the rank selector, in order.
    auto* ranks = view.findChild<QComboBox*>(QStringLiteral("logRank"));
    QCOMPARE(ranks->count(), 6);
    QCOMPARE(ranks->itemText(5), QStringLiteral("Rank 7"));
  }

  void appendsShowWithoutAFlushToo() {
    LogView view;
    view.appendLines(sampleLines());
    QVERIFY(QTest::qWaitFor([&] { return view.totalCount() == 100; }, 5000));
  }

  void filterCombinations() {
    LogView view;
    view.appendLines(sampleLines());
    view.flush();
    for (std::optional<int> rank : {std::optional<int>(), std::optional<int>(0), std::optional<int>(3)})
      for (int mask = 0; mask < 8; ++mask)
        for (const QString& text : {QString(), QStringLiteral("LOSS"), QStringLiteral("line 4")}) {
          const bool info = mask & 1, warning = mask & 2, error = mask & 4;
          view.setRankFilter(rank);
          view.setLevelShown(LogLevel::kInfo, info);
          view.setLevelShown(LogLevel::kWarning, warning);
          view.setLevelShown(LogLevel::kError, error);
          view.setTextFilter(text);
          QVERIFY2(view.shownCount() == expected(rank, info, warning, error, text),
                   qPrintable(QStringLiteral("rank %1 mask %2 text '%3': %4 shown, %5 expected")
                                  .arg(rank ? *rank : -1)
                                  .arg(mask)
                                  .arg(text)
                                  .arg(view.shownCount())
                                  .arg(expected(rank, info, warning, error, text))));
        }
    // By hand: warnings are the odd multiples of 5, and rank 2 only has even lines.
    view.setRankFilter(2);
    view.setLevelShown(LogLevel::kInfo, false);
    view.setLevelShown(LogLevel::kWarning, true);
    view.setLevelShown(LogLevel::kError, false);
    view.setTextFilter({});
    QCOMPARE(view.shownCount(), 0);
  }

  void newLinesPassThroughTheActiveFilter() {
    LogView view;
    view.setLevelShown(LogLevel::kInfo, false);
    view.appendLines(sampleLines());
    view.flush();
    QCOMPARE(view.shownCount(), expected({}, false, true, true, {}));
    view.appendLine({0, 1, LogLevel::kInfo, QStringLiteral("hidden"), {}});
    view.appendLine(logLineFrom(proto::WarningEvent{"slow_rank", "rank 1 is slow", 1}, 0));
    view.flush();
    QCOMPARE(view.shownCount(), expected({}, false, true, true, {}) + 1);
  }

  void textFilterMatchesCodesAndRanks() {
    LogView view;
    view.appendLine(logLineFrom(proto::WarningEvent{"nonfinite_loss", "step 12 skipped", std::nullopt}, 0));
    view.appendLine(logLineFrom(proto::ErrorEvent{"CUDA out of memory", 3, "forward"}, 0));
    view.flush();
    view.setTextFilter(QStringLiteral("nonfinite"));
    QCOMPARE(view.shownCount(), 1);
    view.setTextFilter(QStringLiteral("rank 3"));
    QCOMPARE(view.shownCount(), 1);
    view.setTextFilter(QStringLiteral("memory"));
    QCOMPARE(view.shownCount(), 1);
    // Typing goes through the line edit too (debounced, then applied).
    auto* edit = view.findChild<QLineEdit*>(QStringLiteral("logText"));
    edit->setText(QStringLiteral("step 12"));
    QVERIFY(QTest::qWaitFor(
        [&] {
          return view.shownCount() == 1 && view.filter()->index(0, 0).data().toString().contains("step 12");
        },
        5000));
  }

  void warningsAndErrorsAreHighlighted() {
    LogView view;
    view.appendLine({0, 0, LogLevel::kInfo, QStringLiteral("plain"), {}});
    view.appendLine(logLineFrom(proto::WarningEvent{"slow_rank", "slow", 1}, 0));
    view.appendLine(logLineFrom(proto::ErrorEvent{"boom", 0, "data"}, 0));
    view.flush();
    const LogModel* m = view.model();
    QVERIFY(!m->data(m->index(0), Qt::BackgroundRole).isValid());
    QVERIFY(m->data(m->index(1), Qt::BackgroundRole).value<QBrush>().color().isValid());
    QVERIFY(m->data(m->index(2), Qt::BackgroundRole).value<QBrush>().color() !=
            m->data(m->index(1), Qt::BackgroundRole).value<QBrush>().color());
    QCOMPARE(m->data(m->index(1)).toString(), QStringLiteral("rank 1  WARNING  slow_rank: slow"));
    view.resize(700, 160);
    QVERIFY(saveScreenshot(view, QStringLiteral("log_view.png")));
    QCOMPARE(m->data(m->index(2)).toString(), QStringLiteral("rank 0  ERROR  data: boom"));
  }

  void theOldestLinesGoPastTheCap() {
    LogView view;
    view.model()->setMaxLines(1000);
    for (int batch = 0; batch < 30; ++batch) {
      std::vector<LogLine> lines;
      for (int i = 0; i < 100; ++i)
        lines.push_back({0, 0, LogLevel::kInfo, QStringLiteral("l%1").arg(batch * 100 + i), {}});
      view.appendLines(std::move(lines));
      view.flush();
      QVERIFY(view.totalCount() <= 1000);
    }
    // The newest line is kept; the first ones are gone.
    QCOMPARE(view.model()->line(view.totalCount() - 1).text, QStringLiteral("l2999"));
    QVERIFY(view.model()->line(0).text != QStringLiteral("l0"));
    QCOMPARE(view.shownCount(), view.totalCount());
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::LogViewTest)
#include "log_view_test.moc"
