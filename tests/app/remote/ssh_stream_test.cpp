// Following a file over SSH through `flamingo-train stream` on a long-lived exec
// channel (SshHost::openStream, StreamFileSource) against real sshd servers
// (tests/fixtures/ssh_hosts): the stream's bytes, other calls on the session while
// it is open, the engine ending with its channel, EventTail through growth and
// replacement, and a killed session resumed without loss or repeats. The hosts'
// file system is this machine's, so this build's engine runs there. Waits are hang
// guards, never asserted durations.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "app/monitor/event_tail.h"
#include "app/monitor/stream_file_source.h"
#include "app/remote/ssh_host.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/events.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/ssh_hosts.h"

namespace fs::app {
namespace {

namespace fsys = std::filesystem;
using fs::testing::SshHosts;

const std::string kEngine = std::string(FS_BINARY_DIR) + "/bin/flamingo-train";
constexpr int kGuardMs = 60'000;

class NoQuestions : public remote::Prompter {
 public:
  remote::HostKeyAnswer hostKey(const remote::HostKeyQuestion&) override {
    return remote::HostKeyAnswer::kReject;
  }
  std::optional<remote::Secret> passphrase(const std::string&, int) override { return std::nullopt; }
};

std::string steps(std::uint64_t first, std::uint64_t last) {
  std::string out;
  for (std::uint64_t s = first; s <= last; ++s) {
    protocol::StepEvent e;
    e.step = static_cast<std::int64_t>(s) + 1;
    e.loss = {{"laion", 3.0}};
    out += protocol::encodeEventLine(protocol::Event{s, 1717000000000, e});
  }
  return out;
}

void append(const fsys::path& path, const std::string& text) {
  std::ofstream(path, std::ios::app | std::ios::binary) << text;
}

std::vector<std::uint64_t> iota(std::uint64_t first, std::uint64_t last) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t s = first; s <= last; ++s) v.push_back(s);
  return v;
}

template <class Done>
bool waitFor(Done done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kGuardMs);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

struct Follow {
  std::vector<std::uint64_t> seqs;
  std::vector<FollowIssue> issues;
  template <class Done>
  bool pollUntil(EventTail& tail, Done done) {
    return waitFor([&] {
      while (tail.poll(&issues)) {
      }
      FollowBatch b = tail.takeBatch();
      seqs.insert(seqs.end(), b.seqs.begin(), b.seqs.end());
      return done();
    });
  }
  int count(FollowIssue::Kind kind) const {
    return static_cast<int>(
        std::count_if(issues.begin(), issues.end(), [&](const FollowIssue& i) { return i.kind == kind; }));
  }
};

class SshStreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { hosts_ = new SshHosts(); }
  static void TearDownTestSuite() {
    delete hosts_;
    hosts_ = nullptr;
  }
  void SetUp() override {
    if (!hosts_->ok()) FS_FIXTURE_UNAVAILABLE(hosts_->error());
    dir_ = fsys::path(hosts_->dir()) / ("stream" + std::to_string(++counter_));
    fsys::create_directories(dir_);
    file_ = dir_ / "events.jsonl";
    remote::SshConfigOptions options;
    options.user_config = hosts_->configPath();
    options.system_config = "";
    auto config = remote::SshConfig::load(options);
    ASSERT_TRUE(config.isOk()) << config.status().message();
    auto host = remote::SshHost::open("h0", *config, std::make_shared<NoQuestions>());
    ASSERT_TRUE(host.isOk()) << host.status().message();
    host_ = std::move(*host);
  }

  StreamSourceOptions options() {
    StreamSourceOptions o;
    o.engine = {kEngine};
    o.poll_ms = 5;
    return o;
  }

  static SshHosts* hosts_;
  static int counter_;
  fsys::path dir_, file_;
  std::unique_ptr<remote::SshHost> host_;
};

SshHosts* SshStreamTest::hosts_ = nullptr;
int SshStreamTest::counter_ = 0;

TEST_F(SshStreamTest, StreamsAsItComesBesideOtherCallsAndEndsWithItsChannel) {
  append(file_, "hello\n");
  auto stream = host_->openStream({kEngine, "stream", "--poll-ms", "5", "--", file_.string()});
  ASSERT_TRUE(stream.isOk()) << stream.status().message();
  std::string got;
  ASSERT_TRUE(waitFor([&] {
    auto n = (*stream)->read(got, 1 << 16, 50);
    EXPECT_TRUE(n.isOk()) << n.status().message();
    return got.find("hello\n") != std::string::npos;
  }));
  EXPECT_EQ(got.rfind("flamingo-stream 1\nS ", 0), 0u) << got;
  // The session serves other calls while the stream is open and idle.
  auto st = host_->stat(file_.string());
  ASSERT_TRUE(st.isOk()) << st.status().message();
  EXPECT_EQ(st->size, 6u);
  auto r = host_->run({"pgrep", "-f", file_.string()});
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0) << "the engine runs while its channel is open";
  append(file_, "world\n");
  ASSERT_TRUE(waitFor([&] {
    auto n = (*stream)->read(got, 1 << 16, 50);
    EXPECT_TRUE(n.isOk()) << n.status().message();
    return got.find("world\n") != std::string::npos;
  }));
  // Closing the channel ends the engine (stdin EOF / SIGPIPE on the host).
  stream->reset();
  EXPECT_TRUE(waitFor([&] {
    auto gone = host_->run({"pgrep", "-f", file_.string()});
    return gone.isOk() && gone->exit_code == 1;
  }));
}

TEST_F(SshStreamTest, AnEngineErrorEndsTheStreamWithItsMessage) {
  auto stream = host_->openStream({kEngine, "stream", "--offset", "x", "--", file_.string()});
  ASSERT_TRUE(stream.isOk()) << stream.status().message();
  std::string got;
  protocol::Status ended = protocol::Status::ok();
  ASSERT_TRUE(waitFor([&] {
    auto n = (*stream)->read(got, 1 << 16, 50);
    if (!n.isOk()) ended = n.status();
    return !n.isOk();
  }));
  EXPECT_NE(ended.message().find("h0"), std::string::npos) << ended.message();
  EXPECT_NE(ended.message().find("exited with code 2"), std::string::npos) << ended.message();
  EXPECT_NE(ended.message().find("--offset: 'x'"), std::string::npos) << ended.message();
}

TEST_F(SshStreamTest, EventTailFollowsGrowthAndReplacement) {
  append(file_, steps(0, 99));
  auto source = std::make_unique<StreamFileSource>(*host_, file_.string(), options());
  StreamFileSource* raw = source.get();
  auto st = raw->stat();
  ASSERT_TRUE(st.isOk()) << st.status().message();
  struct stat local {};
  ASSERT_EQ(::stat(file_.c_str(), &local), 0);
  ASSERT_TRUE(st->identity.has_value());
  EXPECT_EQ(st->identity->inode, static_cast<std::uint64_t>(local.st_ino));
  EXPECT_EQ(st->identity->device, static_cast<std::uint64_t>(local.st_dev));

  EventTail tail(std::move(source), {}, 4096, 1 << 20, nullptr);
  Follow f;
  ASSERT_TRUE(f.pollUntil(tail, [&] { return f.seqs.size() >= 100; }));
  append(file_, steps(100, 149));
  ASSERT_TRUE(f.pollUntil(tail, [&] { return f.seqs.size() >= 150; }));
  append(dir_ / "next.jsonl", steps(150, 169));
  fsys::rename(dir_ / "next.jsonl", file_);
  ASSERT_TRUE(f.pollUntil(tail, [&] { return f.seqs.size() >= 170; }));
  EXPECT_EQ(f.seqs, iota(0, 169));
  EXPECT_EQ(f.count(FollowIssue::Kind::kReplaced), 1);
  EXPECT_EQ(f.count(FollowIssue::Kind::kReadError), 0);
  EXPECT_EQ(f.count(FollowIssue::Kind::kDuplicate), 0);
  EXPECT_EQ(raw->streamsOpened(), 2);  // the first file's, then the new one's
}

TEST_F(SshStreamTest, AKilledSessionIsResumedWithoutLossOrRepeats) {
  append(file_, steps(0, 49));
  EventTail tail(std::make_unique<StreamFileSource>(*host_, file_.string(), options()), {}, 4096, 1 << 20,
                 nullptr);
  Follow f;
  ASSERT_TRUE(f.pollUntil(tail, [&] { return f.seqs.size() >= 50; }));
  ASSERT_TRUE(hosts_->killSessions(0)) << hosts_->error();
  append(file_, steps(50, 99));
  ASSERT_TRUE(f.pollUntil(tail, [&] { return f.seqs.size() >= 100; }));
  EXPECT_EQ(f.seqs, iota(0, 99));
  EXPECT_EQ(f.count(FollowIssue::Kind::kDuplicate), 0);
  EXPECT_EQ(f.count(FollowIssue::Kind::kSeqGap), 0);
  EXPECT_EQ(f.count(FollowIssue::Kind::kReplaced), 0);
  EXPECT_EQ(f.count(FollowIssue::Kind::kTruncated), 0);
  EXPECT_TRUE(host_->connected());
}

}  // namespace
}  // namespace fs::app
