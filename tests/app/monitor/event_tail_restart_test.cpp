// EventTail across a restarted writer (NOTE [Restarted writer] in app/monitor/event_tail.h):
// rank 0 killed mid-line, the resumed engine cuts the partial line and appends from there
// with the seqs continuing. Every event once, in order, and no issue, whenever the polls
// fall.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>

#include "app/monitor/event_tail.h"
#include "monitor_test_util.h"

namespace fs::app {
namespace {

using testing::appendText;
using testing::iota;
using testing::line;
using testing::stepBody;

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::string steps(std::uint64_t first, std::uint64_t last, std::int64_t t_ms) {
  std::string out;
  for (std::uint64_t s = first; s <= last; ++s)
    out += line(s, stepBody(static_cast<std::int64_t>(s) + 1), t_ms);
  return out;
}

struct Seen {
  std::vector<std::uint64_t> seqs;
  std::vector<FollowIssue> issues;
  void poll(EventTail& tail) {
    while (tail.poll(&issues)) {
    }
    FollowBatch b = tail.takeBatch();
    seqs.insert(seqs.end(), b.seqs.begin(), b.seqs.end());
  }
  QString issueText() const {
    QStringList out;
    for (const auto& i : issues) out << i.message;
    return out.join(QStringLiteral("\n"));
  }
};

}  // namespace

class EventTailRestartTest : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> dir_;
  std::filesystem::path file_;

  // The first attempt's steps 0..4 and `partial` bytes of step 5's line, as a killed
  // writer leaves them; returns the complete part's size.
  std::uint64_t killedMidLine(std::size_t partial) {
    const std::string done = steps(0, 4, 1000);
    const std::string cut = line(5, stepBody(6), 1000).substr(0, partial);
    if (!appendText(file_, done + cut)) return 0;
    return done.size();
  }

  // What the resumed engine does on open (backend/telemetry/event_sink.h): cut the partial line.
  void cutTo(std::uint64_t size) { std::filesystem::resize_file(file_, size); }

 private slots:
  void init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    file_ = testing::fsPath(dir_->path()) / "events.jsonl";
  }

  // The new attempt's lines are longer than the cut one: the file never shrinks below
  // what the tail read, which the truncation checks cannot see.
  void aReplacedPartialLineIsReadAsItNowIs() {
    for (std::size_t partial : {std::size_t{10}, std::size_t{30}, std::size_t{60}}) {
      file_ = testing::fsPath(dir_->path()) / ("events-" + std::to_string(partial) + ".jsonl");
      const std::uint64_t complete = killedMidLine(partial);
      QVERIFY(complete > 0);
      EventTail tail(file_, {}, kMiB, 64 * kMiB, nullptr);
      Seen seen;
      seen.poll(tail);
      QCOMPARE(seen.seqs, iota(0, 4));
      cutTo(complete);
      QVERIFY(appendText(file_, steps(5, 9, 2000)));  // seq continues; another time stamp
      seen.poll(tail);
      QVERIFY2(seen.issues.empty(), qPrintable(seen.issueText()));
      QCOMPARE(seen.seqs, iota(0, 9));
      QCOMPARE(tail.position().offset, std::filesystem::file_size(file_));
    }
  }

  // A poll between the cut and the first new line: nothing to say, nothing re-read.
  void aPollBetweenTheCutAndTheNewLinesSaysNothing() {
    const std::uint64_t complete = killedMidLine(40);
    EventTail tail(file_, {}, kMiB, 64 * kMiB, nullptr);
    Seen seen;
    seen.poll(tail);
    cutTo(complete);
    seen.poll(tail);
    QVERIFY2(seen.issues.empty(), qPrintable(seen.issueText()));
    QVERIFY(appendText(file_, steps(5, 7, 2000)));
    seen.poll(tail);
    QVERIFY2(seen.issues.empty(), qPrintable(seen.issueText()));
    QCOMPARE(seen.seqs, iota(0, 7));
  }

  // A writer that is merely slow (the same bytes, then the rest): the held part is kept.
  void aLineStillBeingWrittenIsKept() {
    const std::string whole = line(0, stepBody(1), 1000);
    QVERIFY(appendText(file_, whole.substr(0, 20)));
    EventTail tail(file_, {}, kMiB, 64 * kMiB, nullptr);
    Seen seen;
    seen.poll(tail);
    QVERIFY(seen.seqs.empty());
    QVERIFY(appendText(file_, whole.substr(20)));
    seen.poll(tail);
    QVERIFY2(seen.issues.empty(), qPrintable(seen.issueText()));
    QCOMPARE(seen.seqs, iota(0, 0));
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::EventTailRestartTest)
#include "event_tail_restart_test.moc"
