// StreamFileSource over LocalHost and the real `flamingo-train stream`: the
// identity and size from the frames, growth, a missing file or folder, and
// EventTail on top of it through replacement, truncation and streams that break
// every few kilobytes (nothing lost, nothing twice). Waits are hang guards.
#include <sys/stat.h>

#include <QTemporaryDir>
#include <QtTest>
#include <chrono>
#include <filesystem>
#include <thread>

#include "app/monitor/event_tail.h"
#include "app/monitor/stream_file_source.h"
#include "app/remote/local_host.h"
#include "monitor_test_util.h"

namespace fs::app {
namespace {

using testing::appendText;
using testing::line;
using testing::stepBody;
using Code = protocol::Status::Code;

const std::string kEngine = std::string(FS_BINARY_DIR) + "/bin/flamingo-train";
constexpr int kGuardMs = 60'000;  // each engine start loads its libraries (~0.4 s here)

std::string steps(std::uint64_t first, std::uint64_t last) {
  std::string out;
  for (std::uint64_t s = first; s <= last; ++s) out += line(s, stepBody(static_cast<std::int64_t>(s) + 1));
  return out;
}

std::vector<std::uint64_t> iota(std::uint64_t first, std::uint64_t last) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t s = first; s <= last; ++s) v.push_back(s);
  return v;
}

StreamSourceOptions fastOptions(std::vector<std::string> engine = {kEngine}) {
  StreamSourceOptions o;
  o.engine = std::move(engine);
  o.poll_ms = 5;
  return o;
}

FileIdentity identityOf(const std::filesystem::path& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

// Polls `tail` until `done` or the guard; gathers seqs and issues.
struct Follow {
  std::vector<std::uint64_t> seqs;
  std::vector<FollowIssue> issues;
  template <class Done>
  bool pollUntil(EventTail& tail, Done done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kGuardMs);
    while (!done()) {
      if (std::chrono::steady_clock::now() >= end) return false;
      while (tail.poll(&issues)) {
      }
      FollowBatch b = tail.takeBatch();
      seqs.insert(seqs.end(), b.seqs.begin(), b.seqs.end());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }
  int count(FollowIssue::Kind kind) const {
    return static_cast<int>(
        std::count_if(issues.begin(), issues.end(), [&](const FollowIssue& i) { return i.kind == kind; }));
  }
};

}  // namespace

class StreamSourceTest : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> dir_;
  std::filesystem::path file_;
  remote::LocalHost host_;

 private slots:
  void init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    file_ = testing::fsPath(dir_->path()) / "events.jsonl";
  }

  void statAndReadFromTheFrames() {
    QVERIFY(appendText(file_, "hello\n"));
    StreamFileSource source(host_, file_.string(), fastOptions());
    QCOMPARE(source.describe(), "local:" + file_.string());
    auto st = source.stat();
    QVERIFY2(st.isOk(), st.status().message().c_str());
    QCOMPARE(st->size, std::uint64_t{6});
    QVERIFY(st->identity == identityOf(file_));
    char buf[64];
    auto n = source.read(0, buf, sizeof buf);
    QVERIFY(n.isOk());
    QCOMPARE(std::string(buf, *n), std::string("hello\n"));
    // Growth: the size comes with the next frames, the bytes are waited for.
    QVERIFY(appendText(file_, "world\n"));
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kGuardMs);
    while (source.stat()->size < 12 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    n = source.read(6, buf, sizeof buf);
    QVERIFY(n.isOk());
    QCOMPARE(std::string(buf, *n), std::string("world\n"));
    // The byte before the position is still there (the tails look at it).
    n = source.read(5, buf, 1);
    QVERIFY(n.isOk());
    QCOMPARE(buf[0], '\n');
    QCOMPARE(source.streamsOpened(), 1);
  }

  void missingFileAndFolder() {
    StreamFileSource missing(host_, file_.string(), fastOptions());
    QCOMPARE(missing.stat().status().code(), Code::kNotFound);
    StreamFileSource no_dir(host_, (file_.parent_path() / "no-such-run" / "events.jsonl").string(),
                            fastOptions());
    auto st = no_dir.stat();
    QCOMPARE(st.status().code(), Code::kIOError);
    QVERIFY2(st.status().message().find("does not exist") != std::string::npos,
             st.status().message().c_str());
    // The file that comes later is picked up by the same stream. Wait for the size asserted, not
    // for the file to exist: the stream can see it created and not yet written (size 0).
    QVERIFY(appendText(file_, "late\n"));
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kGuardMs);
    const auto seenWhole = [&] {
      auto st = missing.stat();
      return st.isOk() && st->size == 5;
    };
    while (!seenWhole() && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    QCOMPARE(missing.stat()->size, std::uint64_t{5});
    QCOMPARE(missing.streamsOpened(), 1);
  }

  void aMissingEngineIsAnErrorNamingIt() {
    QVERIFY(appendText(file_, "x\n"));
    StreamFileSource source(host_, file_.string(), fastOptions({"/nonexistent/flamingo-train"}));
    auto st = source.stat();
    QCOMPARE(st.status().code(), Code::kIOError);
    QVERIFY2(st.status().message().find("/nonexistent/flamingo-train") != std::string::npos,
             st.status().message().c_str());
  }

  void eventTailThroughGrowthReplacementAndTruncation() {
    QVERIFY(appendText(file_, steps(0, 99)));
    EventTail tail(std::make_unique<StreamFileSource>(host_, file_.string(), fastOptions()), {}, 4096,
                   1 << 20, nullptr);
    Follow f;
    QVERIFY(f.pollUntil(tail, [&] { return f.seqs.size() >= 100; }));
    QVERIFY(appendText(file_, steps(100, 149)));
    QVERIFY(f.pollUntil(tail, [&] { return f.seqs.size() >= 150; }));
    QCOMPARE(f.seqs, iota(0, 149));
    // Replaced: another file renamed over the path.
    const auto next = file_.parent_path() / "next.jsonl";
    QVERIFY(appendText(next, steps(150, 179)));
    std::filesystem::rename(next, file_);
    QVERIFY(f.pollUntil(tail, [&] { return f.seqs.size() >= 180; }));
    QCOMPARE(f.count(FollowIssue::Kind::kReplaced), 1);
    // Truncated, then written again.
    std::filesystem::resize_file(file_, 0);
    QVERIFY(f.pollUntil(tail, [&] { return f.count(FollowIssue::Kind::kTruncated) == 1; }));
    QVERIFY(appendText(file_, steps(180, 199)));
    QVERIFY(f.pollUntil(tail, [&] { return f.seqs.size() >= 200; }));
    QCOMPARE(f.seqs, iota(0, 199));
    QCOMPARE(f.count(FollowIssue::Kind::kDuplicate), 0);
    QCOMPARE(f.count(FollowIssue::Kind::kSeqGap), 0);
    QCOMPARE(f.count(FollowIssue::Kind::kReadError), 0);
  }

  void brokenStreamsResumeWithoutLossOrRepeats() {
    QVERIFY(appendText(file_, steps(0, 119)));
    // Every stream ends after at most 3 reads of 4 KiB, mid-frame: a channel that
    // breaks. (dd writes what it reads at once; head -c would hold a tail in stdio.)
    auto options = fastOptions({"sh", "-c", "\"$0\" \"$@\" | dd bs=4096 count=3 2>/dev/null", kEngine});
    auto source = std::make_unique<StreamFileSource>(host_, file_.string(), options);
    StreamFileSource* raw = source.get();
    EventTail tail(std::move(source), {}, 4096, 1 << 20, nullptr);
    Follow f;
    const bool all = f.pollUntil(tail, [&] { return f.seqs.size() >= 120; });
    QVERIFY2(all, QStringLiteral("%1 seqs, %2 streams, last issue: %3")
                      .arg(f.seqs.size())
                      .arg(raw->streamsOpened())
                      .arg(f.issues.empty() ? QString() : f.issues.back().message)
                      .toUtf8());
    QCOMPARE(f.seqs, iota(0, 119));
    QVERIFY(raw->streamsOpened() > 2);
    QVERIFY(f.count(FollowIssue::Kind::kReadError) > 0);
    QCOMPARE(f.count(FollowIssue::Kind::kDuplicate), 0);
    QCOMPARE(f.count(FollowIssue::Kind::kReplaced), 0);
    QCOMPARE(f.count(FollowIssue::Kind::kTruncated), 0);
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::StreamSourceTest)
#include "stream_source_test.moc"
