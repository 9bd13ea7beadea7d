// EventTail through sources other than a plain local file: reads that fail mid-line
// and resume, a source without identity (as over SFTP) meeting torn lines,
// truncation, replacement and removal; HostFileSource over a remote::Host.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>

#include "app/monitor/event_tail.h"
#include "app/monitor/host_file_source.h"
#include "app/monitor/local_file_source.h"
#include "app/monitor/rank_log_tail.h"
#include "faulty_sources.h"
#include "monitor_test_util.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;
using testing::appendText;
using testing::Faults;
using testing::FaultySource;
using testing::iota;
using testing::line;
using testing::stepBody;

struct Delivered {
  std::vector<std::uint64_t> seqs;
  std::vector<FollowIssue> issues;

  void pollAll(EventTail& tail) {
    while (tail.poll(&issues)) {
    }
    FollowBatch b = tail.takeBatch();
    seqs.insert(seqs.end(), b.seqs.begin(), b.seqs.end());
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

std::string steps(std::uint64_t first_seq, std::uint64_t last_seq, std::int64_t t_ms = 1717000000000) {
  std::string out;
  for (std::uint64_t s = first_seq; s <= last_seq; ++s)
    out += line(s, stepBody(static_cast<std::int64_t>(s) + 1), s == 0 ? t_ms : 1717000000000);
  return out;
}

}  // namespace

class ByteSourceTest : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> dir_;
  std::filesystem::path file_;
  std::shared_ptr<Faults> faults_;

  std::unique_ptr<EventTail> tail(const FollowPosition& from = {}, std::size_t max_read = 1u << 20) {
    return std::make_unique<EventTail>(std::make_unique<FaultySource>(file_, faults_), from, max_read,
                                       std::size_t{1} << 20, nullptr);
  }
  // Another file renamed over the events file.
  void replaceWith(const std::string& text) {
    const auto fresh = file_.parent_path() / "events.jsonl.new";
    QVERIFY(appendText(fresh, text));
    std::filesystem::rename(fresh, file_);
  }

 private slots:
  void init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    file_ = testing::fsPath(dir_->path()) / "events.jsonl";
    faults_ = std::make_shared<Faults>();
  }

  void readErrorMidLineThenResumeLosesNothing_data() {
    QTest::addColumn<bool>("byPath");
    QTest::newRow("held open, with identity") << false;
    QTest::newRow("by path, without identity") << true;
  }
  void readErrorMidLineThenResumeLosesNothing() {
    QFETCH(bool, byPath);
    faults_->by_path = byPath;
    const std::string text = steps(0, 99);
    QVERIFY(appendText(file_, text));
    const std::string upto50 = steps(0, 49);
    faults_->fail_at = upto50.size() + 40;  // inside the line of seq 50
    faults_->read_failures = 3;
    auto t = tail();
    Delivered d;
    for (int poll = 0; poll < 3; ++poll) {
      d.pollAll(*t);
      QCOMPARE(d.seqs, iota(0, 49));
      QCOMPARE(t->position().offset, upto50.size());  // the torn line is not consumed
    }
    QCOMPARE(faults_->failed, 3);
    QCOMPARE(d.count(FollowIssue::Kind::kReadError), 1);  // said once, not at every poll
    QVERIFY2(d.first(FollowIssue::Kind::kReadError)->message.contains(QStringLiteral("connection lost")),
             qPrintable(d.first(FollowIssue::Kind::kReadError)->message));
    d.pollAll(*t);  // the network is back
    QCOMPARE(d.seqs, iota(0, 99));
    QCOMPARE(t->position().offset, text.size());
    QCOMPARE(d.count(FollowIssue::Kind::kDuplicate), 0);
    QCOMPARE(d.count(FollowIssue::Kind::kSeqGap), 0);
    QCOMPARE(d.count(FollowIssue::Kind::kTruncated), 0);
    QCOMPARE(d.count(FollowIssue::Kind::kReplaced), 0);
  }

  void failedStatKeepsThePosition() {
    faults_->by_path = true;
    QVERIFY(appendText(file_, steps(0, 4)));
    auto t = tail();
    Delivered d;
    d.pollAll(*t);
    QVERIFY(appendText(file_, steps(5, 9)));
    faults_->stat_failures = 2;
    d.pollAll(*t);
    d.pollAll(*t);
    QCOMPARE(d.seqs, iota(0, 4));
    QCOMPARE(d.count(FollowIssue::Kind::kReadError), 1);
    d.pollAll(*t);
    QCOMPARE(d.seqs, iota(0, 9));
    QCOMPARE(d.issues.size(), std::size_t{1});
  }

  void tornLastLineWaitsWithoutIdentity() {
    faults_->by_path = true;
    const std::string first = steps(0, 2);
    const std::string last = line(3, stepBody(4));
    QVERIFY(appendText(file_, first + last.substr(0, last.size() / 3)));
    auto t = tail();
    Delivered d;
    d.pollAll(*t);
    QCOMPARE(d.seqs, iota(0, 2));
    QCOMPARE(t->position().offset, first.size());
    QCOMPARE(t->position().inode, std::uint64_t{0});
    QVERIFY(!t->position().head.empty());
    QVERIFY(appendText(file_, last.substr(last.size() / 3, 5)));
    d.pollAll(*t);
    QCOMPARE(d.seqs, iota(0, 2));
    QVERIFY(appendText(file_, last.substr(last.size() / 3 + 5)));
    d.pollAll(*t);
    QCOMPARE(d.seqs, iota(0, 3));
    QVERIFY(d.issues.empty());
  }

  void shorterReplacementWithoutIdentityIsDetected() {
    faults_->by_path = true;
    QVERIFY(appendText(file_, steps(0, 9)));
    auto t = tail();
    Delivered d;
    d.pollAll(*t);
    replaceWith(steps(0, 3, 1717000000001));
    d.pollAll(*t);
    QCOMPARE(d.count(FollowIssue::Kind::kTruncated), 1);
    QVERIFY2(d.first(FollowIssue::Kind::kTruncated)->message.contains(QStringLiteral("shrank")),
             qPrintable(d.first(FollowIssue::Kind::kTruncated)->message));
    QCOMPARE(d.count(FollowIssue::Kind::kReplaced), 0);  // the same change is said once
    QVERIFY(appendText(file_, steps(4, 12)));
    d.pollAll(*t);
    QCOMPARE(d.seqs, iota(0, 12));  // 4..9 again were dropped quietly
    QCOMPARE(d.count(FollowIssue::Kind::kDuplicate), 0);
    QCOMPARE(d.count(FollowIssue::Kind::kSeqGap), 0);
  }

  void longerReplacementWithoutIdentityIsToldByItsFirstBytes() {
    faults_->by_path = true;
    QVERIFY(appendText(file_, steps(0, 4)));
    auto t = tail();
    Delivered d;
    d.pollAll(*t);
    // Lines as long as the old ones (the byte before the read position is '\n' again),
    // and more of them; only the first line's time differs.
    replaceWith(steps(0, 7, 1717000000001));
    d.pollAll(*t);
    QCOMPARE(d.count(FollowIssue::Kind::kReplaced), 1);
    QVERIFY2(
        d.first(FollowIssue::Kind::kReplaced)->message.contains(QStringLiteral("starts with other bytes")),
        qPrintable(d.first(FollowIssue::Kind::kReplaced)->message));
    QCOMPARE(d.count(FollowIssue::Kind::kTruncated), 0);
    QCOMPARE(d.seqs, iota(0, 7));
    QCOMPARE(d.count(FollowIssue::Kind::kDuplicate), 0);
  }

  void firstBytesInThePositionTellAReplacementWhileDetached() {
    faults_->by_path = true;
    QVERIFY(appendText(file_, steps(0, 3)));
    Delivered d;
    FollowPosition at;
    {
      auto t = tail();
      d.pollAll(*t);
      at = t->position();
    }
    replaceWith(steps(0, 5, 1717000000001));
    auto t = tail(at);
    d.pollAll(*t);
    QCOMPARE(d.count(FollowIssue::Kind::kReplaced), 1);
    QCOMPARE(d.seqs, iota(0, 5));
    QCOMPARE(d.count(FollowIssue::Kind::kDuplicate), 0);
  }

  void removedAndBackWithoutIdentity() {
    faults_->by_path = true;
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
    QCOMPARE(d.count(FollowIssue::Kind::kDuplicate), 0);
  }

  void hostFileSourceReadsFromAnOffsetAndStats() {
    testing::FilesHost host;
    QVERIFY(appendText(file_, "0123456789"));
    HostFileSource source(host, file_.string());
    QCOMPARE(source.describe(), "files:" + file_.string());
    auto st = source.stat();
    QVERIFY(st.isOk());
    QCOMPARE(st->size, std::uint64_t{10});
    QVERIFY(!st->identity);
    char buf[8] = {};
    auto n = source.read(6, buf, sizeof buf);
    QVERIFY(n.isOk());
    QCOMPARE(std::string(buf, *n), std::string("6789"));

    HostFileSource missing(host, (file_.parent_path() / "later.jsonl").string());
    QCOMPARE(missing.stat().status().code(), proto::Status::Code::kNotFound);
    HostFileSource no_dir(host, (file_.parent_path() / "no-such-run" / "events.jsonl").string());
    const auto why = no_dir.stat().status();
    QCOMPARE(why.code(), proto::Status::Code::kIOError);
    QVERIFY2(why.message().find("files:" + (file_.parent_path() / "no-such-run").string() +
                                " does not exist") != std::string::npos,
             why.message().c_str());
  }

  void hostRunDirListsAndOpensRelativePaths() {
    testing::FilesHost host;
    const auto run = file_.parent_path();
    std::filesystem::create_directories(run / "logs");
    QVERIFY(appendText(run / "logs" / "rank-0.log", "hello\n"));
    HostRunDir dir(host, run.string());
    auto names = dir.list("logs");
    QVERIFY(names.isOk());
    QCOMPARE(*names, std::vector<std::string>{"rank-0.log"});
    QCOMPARE(dir.list("nothing").status().code(), proto::Status::Code::kNotFound);
    auto log = dir.open("logs/rank-0.log");
    QCOMPARE(log->describe(), "files:" + (run / "logs" / "rank-0.log").string());
    auto text = readWhole(*log, 100);
    QVERIFY(text.isOk());
    QCOMPARE(*text, std::string("hello\n"));
  }
  void rankLogReplacedOrShrunkIsReadFromItsStart() {
    const auto run = file_.parent_path();
    const auto log = run / "logs" / "rank-0.log";
    std::filesystem::create_directories(log.parent_path());
    QVERIFY(appendText(log, "a\nb\n"));
    RankLogTail logs(std::make_shared<LocalRunDir>(run), {});
    QList<RankLogLine> lines;
    std::vector<FollowIssue> issues;
    logs.poll(&lines, &issues);
    QCOMPARE(lines.size(), 2);
    // Renamed over it, and longer: the file held open is not the one at the path.
    const auto fresh = run / "logs" / "rank-0.log.new";
    QVERIFY(appendText(fresh, "c\nd\ne\n"));
    std::filesystem::rename(fresh, log);
    logs.poll(&lines, &issues);
    logs.poll(&lines, &issues);
    QCOMPARE(issues.size(), std::size_t{1});
    QVERIFY2(issues[0].message.contains(QStringLiteral("replaced")), qPrintable(issues[0].message));
    QCOMPARE(lines.size(), 5);
    QCOMPARE(lines.back().text, QStringLiteral("e"));
    std::filesystem::resize_file(log, 0);
    QVERIFY(appendText(log, "f\n"));
    logs.poll(&lines, &issues);
    QCOMPARE(issues.size(), std::size_t{2});
    QVERIFY2(issues[1].message.contains(QStringLiteral("shrank")), qPrintable(issues[1].message));
    QCOMPARE(lines.back().text, QStringLiteral("f"));
    QCOMPARE(logs.offsets().at(0), std::uint64_t{2});
  }
  // Issue 42 (Low): a rank that writes megabytes without a newline holds at most
  // kMaxLineBytes; the line comes out once, cut and marked, the next one intact.
  void rankLogMultiMegabyteLineIsBoundedAndMarked() {
    const auto run = file_.parent_path();
    const auto log = run / "logs" / "rank-1.log";
    std::filesystem::create_directories(log.parent_path());
    QVERIFY(appendText(log, "before\n" + std::string(8u << 20, 'x')));
    RankLogTail logs(std::make_shared<LocalRunDir>(run), {});
    QList<RankLogLine> lines;
    std::vector<FollowIssue> issues;
    for (int i = 0; i < 4; ++i) {  // 4 MiB a poll
      logs.poll(&lines, &issues);
      QVERIFY(logs.bufferedBytes(1) <= RankLogTail::kMaxLineBytes);
    }
    QVERIFY(issues.empty());
    QCOMPARE(lines.size(), 2);
    QCOMPARE(lines[0].text, QStringLiteral("before"));
    QCOMPARE(lines[1].text, QString(RankLogTail::kMaxLineBytes, QLatin1Char('x')) +
                                QStringLiteral(" [truncated: line longer than 65536 bytes]"));
    QCOMPARE(logs.offsets().at(1), std::uint64_t{7});  // the long line has not ended
    QVERIFY(appendText(log, "\nafter\r\n"));
    logs.poll(&lines, &issues);
    QCOMPARE(lines.size(), 3);
    QCOMPARE(lines[2].rank, 1);
    QCOMPARE(lines[2].text, QStringLiteral("after"));
    QCOMPARE(logs.offsets().at(1), std::uint64_t{7 + (8u << 20) + 1 + 7});
    QCOMPARE(logs.bufferedBytes(1), std::size_t{0});
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::ByteSourceTest)
#include "byte_source_test.moc"
