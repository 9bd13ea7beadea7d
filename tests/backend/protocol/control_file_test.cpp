#include "backend/protocol/wire/control_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "backend/protocol/wire/run_dir.h"
#include "tests/backend/protocol/control_listing_expect.h"

namespace fs::protocol {
namespace {

namespace stdfs = std::filesystem;

class ControlFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stdfs::temp_directory_path() / ("fs_control_test_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(dir_);
    ASSERT_TRUE(RunDir(dir_).create().isOk());
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  stdfs::path control() const { return RunDir(dir_).controlDir(); }
  void writeRaw(const std::string& name, const std::string& text) { std::ofstream(control() / name) << text; }
  static ControlCommand command(std::uint64_t seq, ControlVerb verb) {
    return ControlCommand{seq, verb, 1717000000000, "alice", nlohmann::json::object()};
  }
  std::vector<std::uint64_t> pendingSeqs() {
    auto listing = listControl(dir_);
    EXPECT_TRUE(listing.isOk()) << listing.status().message();
    std::vector<std::uint64_t> out;
    for (const auto& p : listing->pending) out.push_back(p.command.seq);
    return out;
  }

  stdfs::path dir_;
};

TEST_F(ControlFileTest, NamesParseAndPrint) {
  EXPECT_EQ(controlFileName(3, ControlVerb::kPause), "3-pause.json");
  auto n = parseControlFileName("0012-checkpoint.json");
  ASSERT_TRUE(n.isOk());
  EXPECT_EQ(n->seq, 12u);
  EXPECT_EQ(n->verb, ControlVerb::kCheckpoint);
  EXPECT_EQ(parseControlFileName("5-reboot.json").status().message(),
            "control file name '5-reboot.json' has unknown verb 'reboot' (known: "
            "stop|kill|pause|resume|checkpoint); "
            "expected <seq>-<verb>.json, e.g. 3-pause.json");
  for (const char* bad : {"notes.txt", "stop.json", "x-stop.json", "-stop.json", "3-stop.json.bak",
                          "3_stop.json", "99999999999999999999999-stop.json", "+3-stop.json"}) {
    EXPECT_FALSE(parseControlFileName(bad).isOk()) << bad;
  }
}

TEST_F(ControlFileTest, EncodeDecodeRoundTrip) {
  ControlCommand c = command(4, ControlVerb::kStop);
  c.args = {{"checkpoint", false}};
  std::string text = encodeControl(c);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["v"], "1.0");
  EXPECT_EQ(j["verb"], "stop");
  EXPECT_EQ(j["issued_at"], 1717000000000);
  auto back = decodeControl(text, "4-stop.json");
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value(), c);
  ControlCommand plain = command(5, ControlVerb::kResume);
  EXPECT_FALSE(nlohmann::json::parse(encodeControl(plain)).contains("args")) << "empty args omitted";
  EXPECT_EQ(decodeControl(encodeControl(plain), "x").value(), plain);
}

TEST_F(ControlFileTest, DecodeRejectsBadContent) {
  EXPECT_EQ(
      decodeControl(R"({"v":"2.0","seq":1,"verb":"stop","issued_at":1,"issuer":"a"})", "control/1-stop.json")
          .status()
          .message(),
      "control/1-stop.json: schema version 2.0 is newer than this reader (1.x); update Flamingo Studio");
  EXPECT_EQ(decodeControl(R"({"v":"1.0","seq":1,"verb":"stop","issued_at":1})", "f").status().message(),
            "f: missing required field 'issuer'");
  EXPECT_EQ(decodeControl(R"({"v":"1.0","seq":1,"verb":"stop","issued_at":1,"issuer":"a","args":[1]})", "f")
                .status()
                .message(),
            "f: field 'args' is [1], expected an object");
  EXPECT_TRUE(
      decodeControl(R"({"v":"1.3","seq":1,"verb":"stop","issued_at":1,"issuer":"a","why":"x"})", "f").isOk());
}

TEST_F(ControlFileTest, IssueAndListInSeqOrder) {
  EXPECT_EQ(nextControlSeq(dir_).value(), 1u);
  for (ControlVerb v : {ControlVerb::kPause, ControlVerb::kResume, ControlVerb::kCheckpoint}) {
    auto c = issueControl(dir_, v, nlohmann::json::object(), "alice", 1717000000000);
    ASSERT_TRUE(c.isOk()) << c.status().message();
  }
  // 10 sorts before 2 by name; the listing must still be in seq order.
  ASSERT_TRUE(writeControlFile(dir_, command(10, ControlVerb::kStop)).value());
  auto listing = listControl(dir_);
  ASSERT_TRUE(listing.isOk()) << listing.status().message();
  EXPECT_TRUE(listing->rejected.empty());
  ASSERT_EQ(listing->pending.size(), 4u);
  EXPECT_EQ(pendingSeqs(), (std::vector<std::uint64_t>{1, 2, 3, 10}));
  EXPECT_EQ(listing->pending[0].command.verb, ControlVerb::kPause);
  EXPECT_EQ(listing->pending[0].command.issuer, "alice");
  EXPECT_EQ(listing->pending[0].path, control() / "1-pause.json");
  EXPECT_EQ(nextControlSeq(dir_).value(), 11u);
  // The file is private to its owner and nothing but the command and the seq claims
  // (NOTE [Control seq claims]) is left behind.
  struct stat st {};
  ASSERT_EQ(::stat((control() / "1-pause.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  for (const auto& e : stdfs::directory_iterator(control())) {
    if (e.path() != RunDir(dir_).controlClaimDir()) {
      EXPECT_NE(e.path().filename().string()[0], '.');
    }
  }
  std::set<std::string> claims;
  for (const auto& e : stdfs::directory_iterator(RunDir(dir_).controlClaimDir()))
    claims.insert(e.path().filename().string());
  EXPECT_EQ(claims, (std::set<std::string>{"1", "2", "3"}));
}

TEST_F(ControlFileTest, WriteNeverReplaces) {
  ASSERT_TRUE(writeControlFile(dir_, command(1, ControlVerb::kPause)).value());
  auto again = writeControlFile(dir_, command(1, ControlVerb::kPause));
  ASSERT_TRUE(again.isOk());
  EXPECT_FALSE(again.value());
}

TEST_F(ControlFileTest, ConcurrentIssuersGetDistinctSeqs) {
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<std::uint64_t> seqs;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto c = issueControl(dir_, ControlVerb::kCheckpoint);
        ASSERT_TRUE(c.isOk()) << c.status().message();
        std::lock_guard lock(mu);
        EXPECT_TRUE(seqs.insert(c->seq).second) << "seq " << c->seq << " issued twice";
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(seqs.size(), 80u);
  EXPECT_EQ(pendingSeqs().size(), 80u);
}

// The interleaving that gave two writers one seq: both list control/ before either
// writes (the GUI's pause and the CLI's stop at once). The claim decides.
TEST_F(ControlFileTest, WritersThatListedTogetherClaimDistinctSeqs) {
  const std::uint64_t a = nextControlSeq(dir_).value();
  const std::uint64_t b = nextControlSeq(dir_).value();
  ASSERT_EQ(a, b);
  auto claimedA = claimControlSeq(dir_, a);
  auto claimedB = claimControlSeq(dir_, b);
  ASSERT_TRUE(claimedA.isOk()) << claimedA.status().message();
  ASSERT_TRUE(claimedB.isOk()) << claimedB.status().message();
  EXPECT_EQ(claimedA.value(), 1u);
  EXPECT_EQ(claimedB.value(), 2u);
  ASSERT_TRUE(writeControlFile(dir_, command(claimedA.value(), ControlVerb::kPause)).value());
  ASSERT_TRUE(writeControlFile(dir_, command(claimedB.value(), ControlVerb::kStop)).value());
  auto listing = listControl(dir_);
  ASSERT_TRUE(listing.isOk());
  EXPECT_TRUE(listing->rejected.empty());
  EXPECT_EQ(pendingSeqs(), (std::vector<std::uint64_t>{1, 2}));
  // A claim whose command was never written (its writer died) still counts: no reuse.
  ASSERT_EQ(claimControlSeq(dir_, nextControlSeq(dir_).value()).value(), 3u);
  EXPECT_EQ(nextControlSeq(dir_).value(), 4u);
  EXPECT_EQ(issueControl(dir_, ControlVerb::kKill)->seq, 4u);
}

TEST_F(ControlFileTest, ClaimsAreNeverMadeThroughASymlink) {
  stdfs::create_directory(dir_ / "elsewhere");
  stdfs::create_directory_symlink(dir_ / "elsewhere", RunDir(dir_).controlClaimDir());
  auto claimed = claimControlSeq(dir_, 1);
  ASSERT_FALSE(claimed.isOk());
  EXPECT_EQ(claimed.status().message(), RunDir(dir_).controlClaimDir().string() +
                                            " is not a directory (a symbolic link or a file); expected "
                                            "the directory of control seq claims");
  EXPECT_TRUE(stdfs::is_empty(dir_ / "elsewhere"));
  EXPECT_FALSE(issueControl(dir_, ControlVerb::kStop).isOk());
  EXPECT_TRUE(listControl(dir_)->pending.empty());
}

TEST_F(ControlFileTest, SeqOfControlEntry) {
  EXPECT_EQ(seqOfControlEntry("3-pause.json"), 3u);
  EXPECT_EQ(seqOfControlEntry("03-pause.json"), 3u);
  EXPECT_EQ(seqOfControlEntry("12-stop.json.2"), 12u);  // done/: a name taken twice
  EXPECT_EQ(seqOfControlEntry("41"), 41u);              // .seq/: a claim
  for (const char* other : {".3-pause.json.tmp-1-0", ".7.ab12cd34", "notes.txt", "3-reboot.json",
                            "3-stop.json.x", "99999999999999999999999", ""}) {
    EXPECT_EQ(seqOfControlEntry(other), std::nullopt) << other;
  }
}

// Independent processes, each issuing its own verb to one run directory at once,
// many times: every command gets its own seq and nothing is rejected.
TEST_F(ControlFileTest, ProcessesIssuingDifferentVerbsAtOnceGetDistinctSeqs) {
  const std::vector<ControlVerb> verbs = {ControlVerb::kPause, ControlVerb::kResume, ControlVerb::kCheckpoint,
                                          ControlVerb::kStop};
  constexpr int kPerProcess = 40;
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  std::vector<pid_t> children;
  std::vector<int> results;  // read ends: each child writes its seqs, one a line
  for (ControlVerb verb : verbs) {
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(gate[1]);
      ::close(out[0]);
      char go;
      if (::read(gate[0], &go, 1) != 0) ::_exit(3);  // EOF: the parent opened the gate
      std::string seqs;
      for (int i = 0; i < kPerProcess; ++i) {
        auto c = issueControl(dir_, verb);
        if (!c) ::_exit(2);
        seqs += std::to_string(c->seq) + "\n";
      }
      const bool ok = ::write(out[1], seqs.data(), seqs.size()) == static_cast<ssize_t>(seqs.size());
      ::_exit(ok ? 0 : 4);
    }
    ::close(out[1]);
    children.push_back(pid);
    results.push_back(out[0]);
  }
  ::close(gate[0]);
  ::close(gate[1]);  // every child starts now
  std::map<std::uint64_t, ControlVerb> issued;
  for (std::size_t i = 0; i < verbs.size(); ++i) {
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(results[i], buf, sizeof buf)) > 0;)
      text.append(buf, static_cast<std::size_t>(n));
    ::close(results[i]);
    int status = 0;
    ASSERT_EQ(::waitpid(children[i], &status, 0), children[i]);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer " << i << " status " << status;
    std::istringstream lines(text);
    for (std::uint64_t seq; lines >> seq;) {
      EXPECT_TRUE(issued.emplace(seq, verbs[i]).second) << "seq " << seq << " issued twice";
    }
  }
  EXPECT_EQ(issued.size(), verbs.size() * kPerProcess);
  testing::expectListingIsWhatWasIssued(dir_, issued);
}

TEST_F(ControlFileTest, TempAndHiddenFilesIgnored) {
  ASSERT_TRUE(writeControlFile(dir_, command(1, ControlVerb::kStop)).value());
  writeRaw(".2-pause.json.tmp-123-0", "{partial");
  writeRaw(".hidden", "x");
  auto listing = listControl(dir_);
  ASSERT_TRUE(listing.isOk());
  EXPECT_EQ(listing->pending.size(), 1u);
  EXPECT_TRUE(listing->rejected.empty());
}

TEST_F(ControlFileTest, UnparsableNamesAndContentReported) {
  writeRaw("notes.txt", "hello");
  writeRaw("2-reboot.json", "{}");
  writeRaw("3-stop.json", "{not json");
  ASSERT_TRUE(writeControlFile(dir_, command(4, ControlVerb::kPause)).value());
  auto listing = listControl(dir_);
  ASSERT_TRUE(listing.isOk());
  EXPECT_EQ(pendingSeqs(), (std::vector<std::uint64_t>{4}));
  ASSERT_EQ(listing->rejected.size(), 3u);
  EXPECT_EQ(listing->rejected[0].path.filename(), "2-reboot.json");
  EXPECT_NE(listing->rejected[0].reason.message().find("unknown verb 'reboot'"), std::string::npos);
  EXPECT_NE(listing->rejected[1].reason.message().find("3-stop.json: malformed JSON"), std::string::npos)
      << listing->rejected[1].reason.message();
  EXPECT_NE(listing->rejected[2].reason.message().find("notes.txt"), std::string::npos);
}

TEST_F(ControlFileTest, ContentMustMatchName) {
  writeRaw("7-pause.json", encodeControl(command(7, ControlVerb::kStop)));
  writeRaw("8-stop.json", encodeControl(command(9, ControlVerb::kStop)));
  auto listing = listControl(dir_);
  ASSERT_TRUE(listing.isOk());
  EXPECT_TRUE(listing->pending.empty());
  ASSERT_EQ(listing->rejected.size(), 2u);
  EXPECT_EQ(listing->rejected[0].reason.message(),
            (control() / "7-pause.json").string() +
                " holds seq 7 verb 'stop' but its name says seq 7 verb 'pause'; expected them to match");
  EXPECT_NE(listing->rejected[1].reason.message().find("holds seq 9"), std::string::npos);
}

TEST_F(ControlFileTest, DuplicateCommandRejected) {
  writeRaw("9-stop.json", encodeControl(command(9, ControlVerb::kStop)));
  writeRaw("09-stop.json", encodeControl(command(9, ControlVerb::kStop)));
  auto listing = listControl(dir_);
  ASSERT_TRUE(listing.isOk());
  ASSERT_EQ(listing->pending.size(), 1u);
  ASSERT_EQ(listing->rejected.size(), 1u);
  EXPECT_NE(listing->rejected[0].reason.message().find("repeats seq 9 and verb 'stop'"), std::string::npos)
      << listing->rejected[0].reason.message();
}

// Two writers without claims (older builds) took one seq for two verbs: both are
// commands, both pending, in file-name order; neither is refused for the seq.
TEST_F(ControlFileTest, OneSeqWithTwoVerbsIsTwoCommands) {
  writeRaw("5-stop.json", encodeControl(command(5, ControlVerb::kStop)));
  writeRaw("5-pause.json", encodeControl(command(5, ControlVerb::kPause)));
  writeRaw("4-checkpoint.json", encodeControl(command(4, ControlVerb::kCheckpoint)));
  auto listing = listControl(dir_);
  ASSERT_TRUE(listing.isOk());
  EXPECT_TRUE(listing->rejected.empty()) << listing->rejected.front().reason.message();
  ASSERT_EQ(listing->pending.size(), 3u);
  EXPECT_EQ(listing->pending[0].path.filename(), "4-checkpoint.json");
  EXPECT_EQ(listing->pending[1].path.filename(), "5-pause.json");
  EXPECT_EQ(listing->pending[1].command.verb, ControlVerb::kPause);
  EXPECT_EQ(listing->pending[2].path.filename(), "5-stop.json");
  EXPECT_EQ(listing->pending[2].command.verb, ControlVerb::kStop);
}

TEST_F(ControlFileTest, ForeignOwnerRejected) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown a file to another uid";
  ASSERT_TRUE(writeControlFile(dir_, command(1, ControlVerb::kKill)).value());
  ASSERT_TRUE(writeControlFile(dir_, command(2, ControlVerb::kPause)).value());
  ASSERT_EQ(::chown((control() / "1-kill.json").c_str(), 65534, 65534), 0);
  auto listing = listControl(dir_);
  ASSERT_TRUE(listing.isOk());
  EXPECT_EQ(pendingSeqs(), (std::vector<std::uint64_t>{2}));
  ASSERT_EQ(listing->rejected.size(), 1u);
  EXPECT_EQ(listing->rejected[0].reason.message(),
            (control() / "1-kill.json").string() + " is owned by uid 65534 but the run directory by uid " +
                std::to_string(::geteuid()) + "; control commands are only accepted from the run's owner");
  // The same file is fine once the run directory belongs to that user.
  ASSERT_EQ(::chown(dir_.c_str(), 65534, 65534), 0);
  listing = listControl(dir_);
  ASSERT_TRUE(listing.isOk());
  ASSERT_EQ(listing->pending.size(), 1u);
  EXPECT_EQ(listing->pending[0].command.seq, 1u);
}

TEST_F(ControlFileTest, SymlinksDirectoriesAndHugeFilesRejected) {
  std::ofstream(dir_ / "outside.json") << encodeControl(command(1, ControlVerb::kStop));
  stdfs::create_symlink(dir_ / "outside.json", control() / "1-stop.json");
  stdfs::create_directory(control() / "2-stop.json");
  writeRaw("3-stop.json", std::string(kMaxControlFileBytes + 1, ' '));
  auto listing = listControl(dir_);
  ASSERT_TRUE(listing.isOk());
  EXPECT_TRUE(listing->pending.empty());
  ASSERT_EQ(listing->rejected.size(), 3u);
  EXPECT_NE(listing->rejected[0].reason.message().find("symbolic link"), std::string::npos);
  EXPECT_NE(listing->rejected[1].reason.message().find("not a regular file"), std::string::npos);
  EXPECT_NE(listing->rejected[2].reason.message().find("expected at most 65536"), std::string::npos);
}

TEST_F(ControlFileTest, MoveToDone) {
  auto c = issueControl(dir_, ControlVerb::kPause, nlohmann::json::object(), "alice", 1);
  ASSERT_TRUE(c.isOk());
  auto listing = listControl(dir_);
  ASSERT_EQ(listing->pending.size(), 1u);
  auto moved = moveControlToDone(dir_, listing->pending[0].path);
  ASSERT_TRUE(moved.isOk()) << moved.status().message();
  EXPECT_EQ(moved.value(), RunDir(dir_).controlDoneDir() / "1-pause.json");
  EXPECT_TRUE(stdfs::exists(moved.value()));
  EXPECT_TRUE(listControl(dir_)->pending.empty());
  EXPECT_EQ(nextControlSeq(dir_).value(), 2u) << "done/ keeps seqs used";
  // A clashing name in done/ is kept, not overwritten.
  writeRaw("1-pause.json", encodeControl(command(1, ControlVerb::kPause)));
  moved = moveControlToDone(dir_, control() / "1-pause.json");
  ASSERT_TRUE(moved.isOk()) << moved.status().message();
  EXPECT_EQ(moved->filename(), "1-pause.json.1");
  stdfs::remove_all(RunDir(dir_).controlClaimDir());
  ASSERT_EQ(stdfs::remove(RunDir(dir_).controlDoneDir() / "1-pause.json"), true);
  EXPECT_EQ(nextControlSeq(dir_).value(), 2u) << "a suffixed name in done/ keeps its seq";
  EXPECT_FALSE(moveControlToDone(dir_, control() / "nope.json").isOk());
}

TEST_F(ControlFileTest, MissingControlDirIsEmpty) {
  stdfs::remove_all(control());
  auto listing = listControl(dir_);
  ASSERT_TRUE(listing.isOk());
  EXPECT_TRUE(listing->pending.empty());
  EXPECT_EQ(nextControlSeq(dir_).value(), 1u);
  EXPECT_FALSE(listControl(dir_ / "missing").isOk());
  EXPECT_FALSE(currentUserName().empty());
}

// NOTE [JSON nesting]: 30,000 levels fit in a control file's 64 KiB and overflowed the
// stack (ASan build) when the command was copied; the input is kept as
// fuzz/regressions/control_file/deep_args.json.
TEST_F(ControlFileTest, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(30000, '[') + std::string(30000, ']');
  auto r = decodeControl(
      R"({"v":"1.0","seq":1,"verb":"stop","issued_at":1,"issuer":"a","args":{"x":)" + deep + "}}", "c.json");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(), "c.json: JSON nested deeper than 64 levels");
  const std::string ok = std::string(60, '[') + std::string(60, ']');
  auto shallow = decodeControl(
      R"({"v":"1.0","seq":1,"verb":"stop","issued_at":1,"issuer":"a","args":{"x":)" + ok + "}}", "c.json");
  EXPECT_TRUE(shallow.isOk()) << shallow.status().toString();
}

}  // namespace
}  // namespace fs::protocol
