// SeqCheck alone: the next seq is delivered quietly, a gap is delivered and
// named with its missing range, an old seq is dropped and named, quietly after
// restart() until the file catches up, and an undecodable line's seq counts
// only when it is the next one.
#include "app/monitor/seq_check.h"

#include <QtTest>

namespace fs::app {

class SeqCheckTest : public QObject {
  Q_OBJECT

 private slots:
  void nextSeqIsDeliveredQuietly() {
    SeqCheck check(QStringLiteral("events.jsonl"), std::nullopt);
    QCOMPARE(check.expected(), std::uint64_t{0});
    for (std::uint64_t seq = 0; seq < 3; ++seq) {
      const auto v = check.accept(seq, seq * 10, seq + 1);
      QVERIFY(v.deliver);
      QVERIFY(!v.issue);
    }
    QCOMPARE(check.last(), std::optional<std::uint64_t>(2));
    QVERIFY(check.skippingSeqs().contains(QStringLiteral("up to seq 2")));
  }

  void gapIsDeliveredAndNamed() {
    SeqCheck check(QStringLiteral("events.jsonl"), std::uint64_t{4});
    const auto v = check.accept(9, 120, 7);
    QVERIFY(v.deliver);
    QVERIFY(v.issue);
    QCOMPARE(v.issue->kind, FollowIssue::Kind::kSeqGap);
    QCOMPARE(v.issue->first_missing, std::uint64_t{5});
    QCOMPARE(v.issue->last_missing, std::uint64_t{8});
    QCOMPARE(v.issue->line, std::uint64_t{7});
    QCOMPARE(v.issue->offset, std::uint64_t{120});
    QVERIFY2(
        v.issue->message.contains(QStringLiteral("events.jsonl line 7 (byte offset 120): seq 9 follows 4")),
        qPrintable(v.issue->message));
    QCOMPARE(check.last(), std::optional<std::uint64_t>(9));
  }

  void oldSeqIsDroppedAndNamed() {
    SeqCheck check(QStringLiteral("events.jsonl"), std::uint64_t{4});
    const auto v = check.accept(3, 50, 2);
    QVERIFY(!v.deliver);
    QVERIFY(v.issue);
    QCOMPARE(v.issue->kind, FollowIssue::Kind::kDuplicate);
    QVERIFY2(v.issue->message.contains(QStringLiteral("seq 3 was already delivered (expected 5)")),
             qPrintable(v.issue->message));
    QCOMPARE(check.last(), std::optional<std::uint64_t>(4));
  }

  void afterRestartOldSeqsAreDroppedQuietlyUntilCaughtUp() {
    SeqCheck check(QStringLiteral("events.jsonl"), std::uint64_t{2});
    check.restart();
    for (std::uint64_t seq = 0; seq <= 2; ++seq) {
      const auto v = check.accept(seq, 0, seq + 1);
      QVERIFY(!v.deliver);
      QVERIFY(!v.issue);
    }
    QVERIFY(check.accept(3, 0, 4).deliver);
    // Caught up: an old seq is named again.
    const auto v = check.accept(1, 0, 5);
    QVERIFY(!v.deliver);
    QVERIFY(v.issue && v.issue->kind == FollowIssue::Kind::kDuplicate);
  }

  void undecodableSeqCountsOnlyWhenNext() {
    SeqCheck check(QStringLiteral("events.jsonl"), std::uint64_t{1});
    check.skipUndecodable(5);
    QCOMPARE(check.last(), std::optional<std::uint64_t>(1));
    check.skipUndecodable(2);
    QCOMPARE(check.last(), std::optional<std::uint64_t>(2));
    const auto v = check.accept(3, 0, 4);
    QVERIFY(v.deliver);
    QVERIFY(!v.issue);
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::SeqCheckTest)
#include "seq_check_test.moc"
