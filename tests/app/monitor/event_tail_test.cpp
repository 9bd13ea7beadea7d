// EventTail driven one poll at a time on real files: partial lines, truncation,
// replacement, undecodable lines, seq gaps and duplicates, over-long lines, and
// continuing from a position.
#include "app/monitor/event_tail.h"

#include <QTemporaryDir>
#include <QtTest>
#include <cstdio>
#include <filesystem>

#include "app/monitor/series_names.h"
#include "monitor_test_util.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;
using testing::appendText;
using testing::iota;
using testing::line;
using testing::stepBody;

// Everything one tail delivered, gathered over polls.
struct Delivered {
  std::vector<std::uint64_t> seqs;
  std::vector<FollowIssue> issues;
  std::vector<proto::Event> events;
  std::size_t loss_points = 0;
  std::size_t memory_points = 0;

  void pollAll(EventTail& tail) {
    while (tail.poll(&issues)) {
    }
    FollowBatch b = tail.takeBatch();
    seqs.insert(seqs.end(), b.seqs.begin(), b.seqs.end());
    events.insert(events.end(), b.events.begin(), b.events.end());
    for (const auto& p : b.series.series)
      if (p.name == series::loss("laion"))
        loss_points += p.y.size();
      else if (p.name == series::memory(0, "device_peak"))
        memory_points += p.y.size();
  }
  int count(FollowIssue::Kind kind) const {
    return static_cast<int>(
        std::count_if(issues.begin(), issues.end(), [&](const FollowIssue& i) { return i.kind == kind; }));
  }
  const FollowIssue* first(FollowIssue::Kind kind) const {
    for (const auto& i : issues)
      if (i.kind == kind) return &i;
    return nullptr;
  }
};

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::string steps(std::uint64_t first_seq, std::uint64_t last_seq) {
  std::string out;
  for (std::uint64_t s = first_seq; s <= last_seq; ++s)
    out += line(s, stepBody(static_cast<std::int64_t>(s) + 1));
  return out;
}

}  // namespace

class EventTailTest : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> dir_;
  std::filesystem::path file_;

  std::unique_ptr<EventTail> tail(const FollowPosition& from = {}, std::size_t max_read = kMiB,
                                  std::size_t max_line = 64 * kMiB) {
    return std::make_unique<EventTail>(file_, from, max_read, max_line, nullptr);
  }

 private slots:
  void init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    file_ = testing::fsPath(dir_->path()) / "events.jsonl";
  }

  void waitsForTheFileAndForEachNewline() {
    auto t = tail();
    Delivered d;
    d.pollAll(*t);  // no file yet: nothing, and no error
    QVERIFY(d.seqs.empty());
    QVERIFY(d.issues.empty());

    const std::string first = line(0, stepBody(1));
    const std::string second = line(1, stepBody(2));
    QVERIFY(appendText(file_, first + second.substr(0, second.size() / 2)));
    d.pollAll(*t);
    QCOMPARE(d.seqs, (std::vector<std::uint64_t>{0}));
    QCOMPARE(t->position().offset, first.size());  // the half line is not consumed
    QVERIFY(appendText(file_, second.substr(second.size() / 2, 3)));
    d.pollAll(*t);
    QCOMPARE(d.seqs.size(), std::size_t{1});
    QVERIFY(appendText(file_, second.substr(second.size() / 2 + 3)));
    d.pollAll(*t);
    QCOMPARE(d.seqs, (std::vector<std::uint64_t>{0, 1}));
    QVERIFY(d.issues.empty());
    QCOMPARE(d.loss_points, std::size_t{2});
    QCOMPARE(t->position().next_line, std::uint64_t{3});
  }

  void continuesFromAPositionWithNothingLostOrRepeated() {
    QVERIFY(appendText(file_, steps(0, 9)));
    const std::string partial = line(10, stepBody(11));
    QVERIFY(appendText(file_, partial.substr(0, 20)));
    Delivered d;
    FollowPosition at;
    {
      auto t = tail({}, 300);  // small reads: several chunks
      d.pollAll(*t);
      at = t->position();
    }
    QCOMPARE(d.seqs, iota(0, 9));
    QCOMPARE(at.last_seq, std::optional<std::uint64_t>(9));
    QVERIFY(at.inode != 0);
    QVERIFY(appendText(file_, partial.substr(20) + steps(11, 14)));
    auto t = tail(at);
    d.pollAll(*t);
    QCOMPARE(d.seqs, iota(0, 14));
    QVERIFY(d.issues.empty());
  }

  void truncatedFileIsReportedAndReadAgainSkippingWhatWasShown() {
    QVERIFY(appendText(file_, steps(0, 4)));
    auto t = tail();
    Delivered d;
    d.pollAll(*t);
    QCOMPARE(d.seqs, iota(0, 4));
    // The file is cut and rewritten with fewer bytes than were read; seqs 0..2 again.
    std::filesystem::resize_file(file_, 0);
    QVERIFY(appendText(file_, steps(0, 2)));
    d.pollAll(*t);
    QCOMPARE(d.count(FollowIssue::Kind::kTruncated), 1);
    QVERIFY2(d.first(FollowIssue::Kind::kTruncated)->message.contains(QStringLiteral("events.jsonl shrank")),
             qPrintable(d.first(FollowIssue::Kind::kTruncated)->message));
    QVERIFY(d.first(FollowIssue::Kind::kTruncated)->message.contains(QStringLiteral("up to seq 4")));
    QCOMPARE(d.seqs, iota(0, 4));  // nothing new, nothing twice
    QVERIFY(appendText(file_, steps(3, 7)));
    d.pollAll(*t);
    QCOMPARE(d.seqs, iota(0, 7));
    QCOMPARE(d.count(FollowIssue::Kind::kDuplicate), 0);
    QCOMPARE(d.count(FollowIssue::Kind::kSeqGap), 0);
  }

  void fileRewrittenPastThePositionIsSeenAsTruncated() {
    QVERIFY(appendText(file_, steps(0, 2)));
    auto t = tail();
    Delivered d;
    d.pollAll(*t);
    QCOMPARE(d.seqs, iota(0, 2));
    // Cut and rewritten with longer lines before the next poll: the size never drops.
    std::filesystem::resize_file(file_, 0);
    std::string longer;
    for (std::uint64_t s = 0; s <= 5; ++s) {
      proto::StepEvent e = stepBody(static_cast<std::int64_t>(s) + 1);
      e.skip_reason = "padding so that the lines no longer end where they did";
      e.skipped = true;
      longer += line(s, e);
    }
    QVERIFY(appendText(file_, longer));
    d.pollAll(*t);
    QCOMPARE(d.count(FollowIssue::Kind::kTruncated), 1);
    QVERIFY2(d.first(FollowIssue::Kind::kTruncated)->message.contains(QStringLiteral("rewritten")),
             qPrintable(d.first(FollowIssue::Kind::kTruncated)->message));
    QCOMPARE(d.seqs, iota(0, 5));
    QCOMPARE(d.count(FollowIssue::Kind::kUndecodable), 0);
  }

  void replacedFileIsReportedAndReadFromItsStart() {
    QVERIFY(appendText(file_, steps(0, 4)));
    auto t = tail();
    Delivered d;
    d.pollAll(*t);
    QCOMPARE(d.seqs, iota(0, 4));
    // A last line reaches the old file, then a new file is renamed over it.
    QVERIFY(appendText(file_, steps(5, 5)));
    const auto fresh = file_.parent_path() / "events.jsonl.new";
    QVERIFY(appendText(fresh, steps(0, 7)));
    std::filesystem::rename(fresh, file_);
    d.pollAll(*t);
    QCOMPARE(d.count(FollowIssue::Kind::kReplaced), 1);
    QVERIFY2(d.first(FollowIssue::Kind::kReplaced)->message.contains(QStringLiteral("replaced")),
             qPrintable(d.first(FollowIssue::Kind::kReplaced)->message));
    QCOMPARE(d.seqs, iota(0, 7));
    QCOMPARE(d.count(FollowIssue::Kind::kDuplicate), 0);
  }

  void replacementWhileDetachedIsSeenOnAttach() {
    QVERIFY(appendText(file_, steps(0, 3)));
    Delivered d;
    FollowPosition at;
    {
      auto t = tail();
      d.pollAll(*t);
      at = t->position();
    }
    const auto fresh = file_.parent_path() / "other.jsonl";
    QVERIFY(appendText(fresh, steps(0, 5)));
    std::filesystem::rename(fresh, file_);
    auto t = tail(at);
    d.pollAll(*t);
    QCOMPARE(d.count(FollowIssue::Kind::kReplaced), 1);
    QCOMPARE(d.seqs, iota(0, 5));
  }

  void undecodableLinesAreReportedAndSkipped() {
    std::string text = line(0, stepBody(1));
    const std::uint64_t bad_offset = text.size();
    text += "{not json at all\n";
    text += line(1, stepBody(2));
    text += R"({"v":"1.0","seq":2,"t":1,"type":"step","step":3,"epoch":0,"lr":1,"step_time_s":1})"
            "\n";
    text += "\n";  // blank lines are fine
    text += line(3, proto::WarningEvent{"slow_rank", "rank 1 is slow", 1});
    text += R"({"v":"1.0","seq":4,"t":1,"type":"from_the_future","x":1})"
            "\n";
    text += line(5, stepBody(4));
    QVERIFY(appendText(file_, text));
    auto t = tail();
    Delivered d;
    d.pollAll(*t);
    QCOMPARE(d.seqs, (std::vector<std::uint64_t>{0, 1, 3, 5}));
    QCOMPARE(d.count(FollowIssue::Kind::kUndecodable), 2);
    QCOMPARE(d.count(FollowIssue::Kind::kSeqGap),
             0);  // the bad line's seq 2 and the new type's 4 count as seen
    const FollowIssue& malformed = d.issues[0];
    QCOMPARE(malformed.line, std::uint64_t{2});
    QCOMPARE(malformed.offset, bad_offset);
    QVERIFY2(
        malformed.message.contains(QStringLiteral("events.jsonl line 2 (byte offset %1)").arg(bad_offset)) &&
            malformed.message.contains(QStringLiteral("malformed JSON")),
        qPrintable(malformed.message));
    QVERIFY2(d.issues[1].message.contains(QStringLiteral("missing required field 'loss'")),
             qPrintable(d.issues[1].message));
    QCOMPARE(d.events.size(), std::size_t{1});
    QVERIFY(std::holds_alternative<proto::WarningEvent>(d.events[0].body));
  }

  void gapsAndDuplicatesAreReported() {
    std::string text = steps(0, 1) + steps(4, 5) + steps(5, 5) + steps(2, 2) + steps(6, 6);
    QVERIFY(appendText(file_, text));
    auto t = tail();
    Delivered d;
    d.pollAll(*t);
    QCOMPARE(d.seqs, (std::vector<std::uint64_t>{0, 1, 4, 5, 6}));
    QCOMPARE(d.count(FollowIssue::Kind::kSeqGap), 1);
    const FollowIssue* gap = d.first(FollowIssue::Kind::kSeqGap);
    QCOMPARE(gap->first_missing, std::uint64_t{2});
    QCOMPARE(gap->last_missing, std::uint64_t{3});
    QVERIFY2(gap->message.contains(QStringLiteral("events 2..3 are missing")), qPrintable(gap->message));
    QCOMPARE(d.count(FollowIssue::Kind::kDuplicate), 2);  // the second 5, and 2 arriving after 4
    QVERIFY2(d.first(FollowIssue::Kind::kDuplicate)
                 ->message.contains(QStringLiteral("seq 5 was already delivered")),
             qPrintable(d.first(FollowIssue::Kind::kDuplicate)->message));
  }

  void overLongLineIsReportedOnceAndSkipped() {
    const std::string huge = line(1, proto::WarningEvent{"x", std::string(5000, 'a'), std::nullopt});
    QVERIFY(appendText(file_, steps(0, 0) + huge.substr(0, 2000)));
    auto t = tail({}, 700, 1000);
    Delivered d;
    d.pollAll(*t);
    QVERIFY(appendText(file_, huge.substr(2000) + steps(2, 2)));
    d.pollAll(*t);
    QCOMPARE(d.count(FollowIssue::Kind::kUndecodable), 1);
    QVERIFY2(d.issues[0].message.contains(QStringLiteral("line 2")) &&
                 d.issues[0].message.contains(QStringLiteral("longer than 1000 bytes")),
             qPrintable(d.issues[0].message));
    QCOMPARE(d.seqs, (std::vector<std::uint64_t>{0, 2}));
    QCOMPARE(d.count(FollowIssue::Kind::kSeqGap), 1);  // the skipped line's seq is unknown
  }

  void largeBacklogDecodedInPiecesKeepsFileOrder() {
    // Several MiB per read, so the helpers decode pieces (NOTE [Parallel backlog]); the
    // odd lines are spread so that they land in different pieces.
    std::string text;
    std::vector<std::uint64_t> want;
    std::uint64_t seq = 0;
    std::int64_t step = 0;
    int undecodable = 0;
    std::size_t memory_events = 0;
    for (int i = 0; i < 30000; ++i) {
      if (i % 7919 == 100) {
        text += "{broken\n";
        ++undecodable;
        continue;
      }
      if (i == 12345) seq += 3;  // a gap of three
      if (i % 5003 == 17) {
        text += line(seq, proto::WarningEvent{"w", "warning " + std::to_string(i), std::nullopt});
      } else if (i % 10 == 3) {
        proto::MemoryEvent m;
        m.step = step;
        m.ranks.push_back({0, i, i, 1, 2, 3, 4, 5, std::nullopt, i});
        text += line(seq, m);
        ++memory_events;
      } else {
        text += line(seq, stepBody(++step), 1717000000000 + i);
      }
      want.push_back(seq++);
      if (i == 20000) text += line(seq - 2, stepBody(step));  // a duplicate
    }
    QVERIFY(text.size() > 4 * EventTail::kParallelMinBytes);
    QVERIFY(appendText(file_, text));
    auto t = tail({}, 4 * kMiB);
    Delivered d;
    d.pollAll(*t);
    QCOMPARE(d.seqs, want);
    QCOMPARE(d.count(FollowIssue::Kind::kUndecodable), undecodable);
    QCOMPARE(d.count(FollowIssue::Kind::kSeqGap), 1);
    QCOMPARE(d.count(FollowIssue::Kind::kDuplicate), 1);
    QCOMPARE(d.loss_points, static_cast<std::size_t>(step));
    QCOMPARE(d.events.size(), want.size() - static_cast<std::size_t>(step));
    QCOMPARE(static_cast<std::size_t>(std::count_if(
                 d.events.begin(), d.events.end(),
                 [](const proto::Event& e) { return std::holds_alternative<proto::MemoryEvent>(e.body); })),
             memory_events);
    QCOMPARE(d.memory_points, memory_events);
    QCOMPARE(t->position().offset, text.size());
    QCOMPARE(t->position().next_line,
             static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n') + 1));
    // The last step delivered is the one the batch reports.
    QVERIFY(appendText(file_, line(seq, stepBody(step + 1))));
    d.pollAll(*t);
    QCOMPARE(d.seqs.back(), seq);
  }

  void lastStepOfABatchIsTheLastDelivered() {
    QVERIFY(appendText(file_, steps(0, 20000)));
    auto t = tail({}, 64 * kMiB);
    std::vector<FollowIssue> issues;
    while (t->poll(&issues)) {
    }
    FollowBatch b = t->takeBatch();
    QVERIFY(b.last_step.has_value());
    QCOMPARE(b.last_step->seq, std::uint64_t{20000});
    QCOMPARE(std::get<proto::StepEvent>(b.last_step->body).step, std::int64_t{20001});
    QCOMPARE(b.series.rows.size(), std::size_t{20001});
  }

  void aMissingRunDirectoryIsReportedOnce() {
    const auto missing = file_.parent_path() / "no-such-run" / "events.jsonl";
    EventTail t(missing, {}, kMiB, kMiB, nullptr);
    std::vector<FollowIssue> issues;
    t.poll(&issues);
    t.poll(&issues);
    QCOMPARE(issues.size(), std::size_t{1});
    QCOMPARE(issues[0].kind, FollowIssue::Kind::kReadError);
    QVERIFY2(issues[0].message.contains(QStringLiteral("no-such-run does not exist")),
             qPrintable(issues[0].message));
  }

  void aRemovedFileIsReportedOnce() {
    QVERIFY(appendText(file_, steps(0, 1)));
    auto t = tail();
    Delivered d;
    d.pollAll(*t);
    std::filesystem::remove(file_);
    d.pollAll(*t);
    d.pollAll(*t);
    QCOMPARE(d.count(FollowIssue::Kind::kRemoved), 1);
    QVERIFY(appendText(file_, steps(0, 3)));
    d.pollAll(*t);
    QCOMPARE(d.count(FollowIssue::Kind::kReplaced), 1);
    QCOMPARE(d.seqs, iota(0, 3));
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::EventTailTest)
#include "event_tail_test.moc"
