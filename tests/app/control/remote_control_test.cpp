// Control files written through a remote::Host (app/control/remote_control.h):
// seqs claimed in control/.seq/ over LocalHost and over SFTP to real sshd
// servers (tests/fixtures/ssh_hosts, whose file system is this machine's),
// racing each other and the local writer (protocol::issueControl) with a
// different verb each: every command gets its own seq, nothing is rejected.
#include "app/control/remote_control.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "app/remote/local_host.h"
#include "backend/protocol/wire/run_dir.h"
#include "tests/backend/protocol/control_listing_expect.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/ssh_host_open.h"
#include "tests/fixtures/ssh_hosts.h"

namespace fs::app {
namespace {

namespace stdfs = std::filesystem;
using protocol::ControlVerb;

// One writer: issues `count` commands of `verb` through `issue`.
struct Writer {
  ControlVerb verb;
  std::function<protocol::StatusOr<protocol::ControlCommand>()> issue;
};

// Runs the writers at once (one thread each) and checks the outcome in `runDir`.
void raceAndCheck(const stdfs::path& runDir, std::vector<Writer> writers, int count) {
  std::mutex mu;
  std::map<std::uint64_t, ControlVerb> issued;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (const Writer& w : writers) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < count; ++i) {
        auto c = w.issue();
        std::lock_guard lock(mu);
        if (!c) {
          errors.push_back(c.status().message());
          return;
        }
        if (c->verb != w.verb) errors.push_back("wrong verb for seq " + std::to_string(c->seq));
        if (!issued.emplace(c->seq, w.verb).second)
          errors.push_back("seq " + std::to_string(c->seq) + " twice");
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(issued.size(), writers.size() * static_cast<std::size_t>(count));
  protocol::testing::expectListingIsWhatWasIssued(runDir, issued);
}

class RemoteControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = stdfs::temp_directory_path() / ("fs_remote_control_test_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(run_);
    ASSERT_TRUE(protocol::RunDir(run_).create().isOk());
  }
  void TearDown() override { stdfs::remove_all(run_); }

  stdfs::path run_;
};

TEST_F(RemoteControlTest, ClaimsAreSharedWithTheLocalWriter) {
  remote::LocalHost host;
  const std::string dir = run_.string();
  // Both list before either claims: the claim decides.
  const std::uint64_t a = nextRemoteControlSeq(host, dir).value();
  ASSERT_EQ(protocol::nextControlSeq(run_).value(), a);
  EXPECT_EQ(claimRemoteControlSeq(host, dir, a).value(), 1u);
  EXPECT_EQ(protocol::claimControlSeq(run_, a).value(), 2u);
  EXPECT_EQ(claimRemoteControlSeq(host, dir, a).value(), 3u);
  EXPECT_EQ(nextRemoteControlSeq(host, dir).value(), 4u) << "claims count, commands or not";
  auto c = issueRemoteControl(host, dir, ControlVerb::kPause);
  ASSERT_TRUE(c.isOk()) << c.status().message();
  EXPECT_EQ(c->seq, 4u);
  EXPECT_TRUE(stdfs::exists(run_ / "control" / "4-pause.json"));
  EXPECT_TRUE(stdfs::exists(run_ / "control" / ".seq" / "4"));
  // done/'s suffixed names count as well.
  stdfs::create_directories(run_ / "control" / "done");
  std::ofstream(run_ / "control" / "done" / "9-stop.json.1") << "{}";
  EXPECT_EQ(nextRemoteControlSeq(host, dir).value(), 10u);
}

TEST_F(RemoteControlTest, HostAndLocalWritersRacing) {
  std::vector<Writer> writers;
  const std::string dir = run_.string();
  for (ControlVerb verb : {ControlVerb::kPause, ControlVerb::kResume}) {
    auto host = std::make_shared<remote::LocalHost>();
    writers.push_back({verb, [host, dir, verb] { return issueRemoteControl(*host, dir, verb); }});
  }
  for (ControlVerb verb : {ControlVerb::kCheckpoint, ControlVerb::kStop}) {
    writers.push_back({verb, [this, verb] { return protocol::issueControl(run_, verb); }});
  }
  raceAndCheck(run_, std::move(writers), 30);
}

// Over SFTP: two connections (two sshd servers, one file system) and the local
// writer, a different verb each.
TEST_F(RemoteControlTest, SftpAndLocalWritersRacing) {
  fs::testing::SshHosts hosts;
  if (!hosts.ok()) FS_FIXTURE_UNAVAILABLE("sshd hosts: " + hosts.error());
  const stdfs::path run = stdfs::path(hosts.dir()) / "run";
  ASSERT_TRUE(protocol::RunDir(run).create().isOk());
  std::vector<Writer> writers;
  int i = 0;
  for (ControlVerb verb : {ControlVerb::kPause, ControlVerb::kCheckpoint}) {
    auto host = fs::testing::openFixtureHost(hosts, "h" + std::to_string(i++));
    ASSERT_TRUE(host.isOk()) << host.status().message();
    std::shared_ptr<remote::SshHost> h = host.value();
    writers.push_back({verb, [h, run, verb] { return issueRemoteControl(*h, run.string(), verb); }});
  }
  writers.push_back(
      {ControlVerb::kResume, [run] { return protocol::issueControl(run, ControlVerb::kResume); }});
  raceAndCheck(run, std::move(writers), 15);
}

}  // namespace
}  // namespace fs::app
