// FileWatch alone, on real files: a file not created yet is quiet; one removed
// is said once; another file renamed over the path of the one held open is
// said and asks for a re-read; without identities (as over SFTP) other first
// bytes ask for a re-read and the same ones do not; a lasting stat error is
// said once.
#include "app/monitor/file_watch.h"

#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <filesystem>

#include "app/monitor/local_file_source.h"
#include "faulty_sources.h"
#include "monitor_test_util.h"

namespace fs::app {

namespace fsys = std::filesystem;

class FileWatchTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  fsys::path path() const { return testing::fsPath(dir_.path()) / "events.jsonl"; }
  static int count(const std::vector<FollowIssue>& issues, FollowIssue::Kind kind) {
    return static_cast<int>(
        std::count_if(issues.begin(), issues.end(), [&](const FollowIssue& i) { return i.kind == kind; }));
  }

 private slots:
  void init() {
    QVERIFY(dir_.isValid());
    fsys::remove(path());
  }

  void missingIsQuietAndRemovedIsSaidOnce() {
    FileWatch watch(std::make_unique<LocalFileSource>(path()), FollowPosition{});
    std::vector<FollowIssue> issues;
    bool restart = true;
    QVERIFY(!watch.stat({}, &issues, &restart));
    QVERIFY(!restart);
    QVERIFY(issues.empty());

    QVERIFY(testing::appendText(path(), "abc\n"));
    const auto st = watch.stat({}, &issues, &restart);
    QVERIFY(st);
    QCOMPARE(st->size, std::uint64_t{4});
    QVERIFY(!restart);
    QVERIFY(watch.inode() != 0);
    QVERIFY(issues.empty());

    fsys::remove(path());
    QVERIFY(!watch.checkPath({}, &issues));
    QVERIFY(!watch.checkPath({}, &issues));
    QCOMPARE(count(issues, FollowIssue::Kind::kRemoved), 1);
    QVERIFY(issues.front().message.contains(QStringLiteral("events.jsonl was removed")));
  }

  void anotherFileAtThePathAsksForAReread() {
    FileWatch watch(std::make_unique<LocalFileSource>(path()), FollowPosition{});
    std::vector<FollowIssue> issues;
    bool restart = false;
    QVERIFY(testing::appendText(path(), "old\n"));
    QVERIFY(watch.stat({}, &issues, &restart));
    const std::uint64_t old_inode = watch.inode();
    const fsys::path fresh = testing::fsPath(dir_.path()) / "fresh";
    QVERIFY(testing::appendText(fresh, "new\n"));
    fsys::rename(fresh, path());
    QVERIFY(watch.checkPath({}, &issues));
    QCOMPARE(count(issues, FollowIssue::Kind::kReplaced), 1);
    QVERIFY(watch.stat({}, &issues, &restart));
    QVERIFY(!restart);  // the new file was expected
    QVERIFY(watch.inode() != old_inode);
  }

  void withoutIdentityFirstBytesTellFilesApart() {
    auto faults = std::make_shared<testing::Faults>();
    faults->by_path = true;
    FileWatch watch(std::make_unique<testing::FaultySource>(path(), faults), FollowPosition{});
    std::vector<FollowIssue> issues;
    QVERIFY(testing::appendText(path(), "first line\n"));
    QCOMPARE(watch.checkHead(11, {}, 1, 0, &issues), FileWatch::Head::kSame);
    QCOMPARE(watch.head(), std::string("first line\n"));
    QVERIFY(testing::appendText(path(), "second\n"));
    QCOMPARE(watch.checkHead(18, {}, 2, 11, &issues), FileWatch::Head::kSame);
    fsys::remove(path());
    QVERIFY(testing::appendText(path(), "other bytes\n"));
    QCOMPARE(watch.checkHead(12, QStringLiteral(", skipping"), 3, 18, &issues), FileWatch::Head::kReplaced);
    QCOMPARE(count(issues, FollowIssue::Kind::kReplaced), 1);
    QCOMPARE(issues.back().line, std::uint64_t{3});
    QVERIFY(issues.back().message.endsWith(QStringLiteral(", skipping")));
    QCOMPARE(watch.head(), std::string("other bytes\n"));
  }

  void lastingStatErrorIsSaidOnce() {
    auto faults = std::make_shared<testing::Faults>();
    faults->stat_failures = 3;
    QVERIFY(testing::appendText(path(), "x\n"));
    FileWatch watch(std::make_unique<testing::FaultySource>(path(), faults), FollowPosition{});
    std::vector<FollowIssue> issues;
    bool restart = false;
    for (int i = 0; i < 3; ++i) QVERIFY(!watch.stat({}, &issues, &restart));
    QCOMPARE(count(issues, FollowIssue::Kind::kReadError), 1);
    QVERIFY(watch.stat({}, &issues, &restart));
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::FileWatchTest)
#include "file_watch_test.moc"
