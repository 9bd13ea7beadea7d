#include "backend/telemetry/control_inbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/backend/telemetry/telemetry_test_util.h"

namespace fs::telemetry {
namespace {

namespace stdfs = std::filesystem;
using protocol::ControlAckEvent;
using protocol::ControlCommand;
using protocol::ControlVerb;
using protocol::Event;
using protocol::RunDir;
using testing::decodeAll;
using testing::readAll;
using testing::ScratchDir;

constexpr std::int64_t kStart = 1717000000000;  // the attempt's start, unix ms

class ControlInboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(run_.create().isOk());
    auto emitter = TelemetryEmitter::open(run_);
    ASSERT_TRUE(emitter.isOk());
    emitter_ = std::move(emitter).value();
    inbox_ = std::make_unique<ControlInbox>(run_, *emitter_, kStart);
  }

  // Writes a command as a client would, issued `issued_at`.
  void issue(std::uint64_t seq, ControlVerb verb, std::int64_t issued_at = kStart + 1000) {
    ControlCommand c{seq, verb, issued_at, "alice", nlohmann::json::object()};
    auto written = protocol::writeControlFile(run_.root(), c);
    ASSERT_TRUE(written.isOk() && written.value());
  }
  void writeRaw(const std::string& name, const std::string& text) {
    std::ofstream(run_.controlDir() / name) << text;
  }
  std::vector<std::uint64_t> poll(std::int64_t step = 7) {
    auto got = inbox_->poll(step);
    EXPECT_TRUE(got.isOk()) << got.status().message();
    std::vector<std::uint64_t> seqs;
    if (got.isOk())
      for (const auto& c : got.value()) seqs.push_back(c.seq);
    return seqs;
  }
  std::vector<std::string> namesIn(const stdfs::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : stdfs::directory_iterator(dir))
      if (e.is_regular_file() || e.is_symlink()) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<Event> events() {
    EXPECT_TRUE(emitter_->flush().isOk());
    return decodeAll(readAll(run_.eventsFile()));
  }
  std::vector<ControlAckEvent> acks() {
    std::vector<ControlAckEvent> out;
    for (const auto& e : events())
      if (auto* a = std::get_if<ControlAckEvent>(&e.body)) out.push_back(*a);
    return out;
  }

  ScratchDir dir_;
  RunDir run_{dir_.path()};
  std::unique_ptr<TelemetryEmitter> emitter_;
  std::unique_ptr<ControlInbox> inbox_;
};

TEST_F(ControlInboxTest, CommandsComeOnceInSeqOrderAndAreMovedToDoneFirst) {
  issue(5, ControlVerb::kCheckpoint);
  issue(2, ControlVerb::kPause);
  issue(3, ControlVerb::kResume);
  EXPECT_EQ(poll(), (std::vector<std::uint64_t>{2, 3, 5}));
  EXPECT_TRUE(namesIn(run_.controlDir()).empty());
  EXPECT_EQ(namesIn(run_.controlDoneDir()),
            (std::vector<std::string>{"2-pause.json", "3-resume.json", "5-checkpoint.json"}));
  EXPECT_TRUE(poll().empty());
  EXPECT_TRUE(acks().empty());  // valid commands are acknowledged by the caller, after acting
  issue(6, ControlVerb::kStop);
  EXPECT_EQ(poll(), (std::vector<std::uint64_t>{6}));
}

TEST_F(ControlInboxTest, AckEmitsControlAck) {
  issue(1, ControlVerb::kCheckpoint);
  auto got = inbox_->poll(10);
  ASSERT_TRUE(got.isOk());
  ASSERT_EQ(got->size(), 1u);
  inbox_->ack(got->front(), true, "saved checkpoint_step12.pt", 12);
  auto a = acks();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0], (ControlAckEvent{1, "checkpoint", true, "saved checkpoint_step12.pt", 12}));
}

TEST_F(ControlInboxTest, RejectedFilesAreAckedFalseAndMoved) {
  writeRaw("4-stop.json", "this is not json");
  writeRaw("8-pause.json", protocol::encodeControl({9, ControlVerb::kPause, kStart + 5, "bob", {}}));
  writeRaw("notes.txt", "hello");
  issue(6, ControlVerb::kResume);
  EXPECT_EQ(poll(11), (std::vector<std::uint64_t>{6}));
  EXPECT_TRUE(namesIn(run_.controlDir()).empty());
  EXPECT_EQ(namesIn(run_.controlDoneDir()),
            (std::vector<std::string>{"4-stop.json", "6-resume.json", "8-pause.json", "notes.txt"}));
  std::vector<Event> all = events();
  std::vector<ControlAckEvent> a;
  std::vector<protocol::WarningEvent> w;
  for (const auto& e : all) {
    if (auto* x = std::get_if<ControlAckEvent>(&e.body)) a.push_back(*x);
    if (auto* x = std::get_if<protocol::WarningEvent>(&e.body)) w.push_back(*x);
  }
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].control_seq, 4u);
  EXPECT_EQ(a[0].verb, "stop");
  EXPECT_FALSE(a[0].ok);
  EXPECT_EQ(a[0].step, 11);
  EXPECT_NE(a[0].message.find("malformed"), std::string::npos) << a[0].message;
  EXPECT_EQ(a[1].control_seq, 8u);
  EXPECT_FALSE(a[1].ok);
  EXPECT_NE(a[1].message.find("holds seq 9"), std::string::npos) << a[1].message;
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].code, "control_rejected");
  EXPECT_NE(w[0].message.find("notes.txt"), std::string::npos) << w[0].message;
  EXPECT_TRUE(poll().empty());
  EXPECT_EQ(acks().size(), 2u);  // reported once
}

TEST_F(ControlInboxTest, ForeignOwnerIsRejected) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown a file to another uid";
  issue(1, ControlVerb::kKill);
  ASSERT_EQ(::chown((run_.controlDir() / "1-kill.json").c_str(), 65534, 65534), 0);
  EXPECT_TRUE(poll().empty());
  auto a = acks();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].control_seq, 1u);
  EXPECT_EQ(a[0].verb, "kill");
  EXPECT_FALSE(a[0].ok);
  EXPECT_NE(a[0].message.find("only accepted from the run's owner"), std::string::npos) << a[0].message;
  EXPECT_EQ(namesIn(run_.controlDoneDir()), (std::vector<std::string>{"1-kill.json"}));
}

TEST_F(ControlInboxTest, CommandsFromBeforeTheAttemptAreRefused) {
  issue(1, ControlVerb::kStop, kStart - 60000);
  issue(2, ControlVerb::kCheckpoint, kStart - 60000);
  // 1 was left by the crashed attempt: its file is as old as its issued_at.
  struct timespec old[2] = {{(kStart - 60000) / 1000, 0}, {(kStart - 60000) / 1000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (run_.controlDir() / "1-stop.json").c_str(), old, 0), 0);
  // 2 was written just now (the file's time is the real clock, long after kStart) by a
  // client whose clock runs late: it is not stale.
  EXPECT_EQ(poll(), (std::vector<std::uint64_t>{2}));
  auto a = acks();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].control_seq, 1u);
  EXPECT_FALSE(a[0].ok);
  EXPECT_EQ(a[0].message, kStaleCommandMessage);
  EXPECT_EQ(namesIn(run_.controlDoneDir()), (std::vector<std::string>{"1-stop.json", "2-checkpoint.json"}));
}

TEST_F(ControlInboxTest, ARepeatedCommandIsRefused) {
  issue(3, ControlVerb::kPause);
  EXPECT_EQ(poll(), (std::vector<std::uint64_t>{3}));
  writeRaw("03-pause.json", protocol::encodeControl({3, ControlVerb::kPause, kStart + 5, "bob", {}}));
  EXPECT_TRUE(poll().empty());
  auto a = acks();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].control_seq, 3u);
  EXPECT_EQ(a[0].verb, "pause");
  EXPECT_FALSE(a[0].ok);
  EXPECT_EQ(a[0].message, "seq 3 pause was already handled; this repeat is ignored");
}

// Older clients without seq claims can give two commands one seq: both are acted on
// (seq order, then file name) and acked with their verbs, also when the second
// arrives after the first was handled; neither is refused for the seq.
TEST_F(ControlInboxTest, OneSeqWithTwoVerbsIsTwoCommands) {
  issue(3, ControlVerb::kStop);
  issue(3, ControlVerb::kCheckpoint);
  auto got = inbox_->poll(7);
  ASSERT_TRUE(got.isOk()) << got.status().message();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].verb, ControlVerb::kCheckpoint);
  EXPECT_EQ((*got)[1].verb, ControlVerb::kStop);
  EXPECT_TRUE(acks().empty()) << "nothing refused";
  issue(4, ControlVerb::kPause);
  EXPECT_EQ(poll(), (std::vector<std::uint64_t>{4}));
  issue(4, ControlVerb::kResume);  // a late collision
  EXPECT_EQ(poll(), (std::vector<std::uint64_t>{4}));
  EXPECT_TRUE(acks().empty());
  EXPECT_EQ(namesIn(run_.controlDoneDir()),
            (std::vector<std::string>{"3-checkpoint.json", "3-stop.json", "4-pause.json", "4-resume.json"}));
}

TEST_F(ControlInboxTest, MissingControlDirIsEmpty) {
  stdfs::remove_all(run_.controlDir());
  EXPECT_TRUE(poll().empty());
}

}  // namespace
}  // namespace fs::telemetry
