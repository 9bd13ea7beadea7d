// The pre-flight table on this machine: two "nodes" that are this machine
// (ThisMachineHost, test-only), the real flamingo-train built here, real
// directories and real sockets on loopback.
#include "app/cluster/preflight.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "app/cluster/preflight_checks.h"
#include "backend/protocol/wire/events.h"
#include "tests/app/cluster/this_machine_host.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace {

namespace stdfs = std::filesystem;
using fs::app::cluster::CheckKind;
using fs::app::cluster::CheckStatus;
using fs::app::cluster::PreflightRequest;
using fs::app::cluster::PreflightTable;
using fs::test::ThisMachineHost;

const stdfs::path kEngine = FS_TEST_FLAMINGO_TRAIN;

// A socket the test holds (a port in use, a foreign service); closed on scope exit.
struct Socket {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  Socket() = default;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
  int bindAny(bool listen) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return -1;
    if (listen && ::listen(fd, 8) != 0) return -1;
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
  }
};

// A port that was free a moment ago (the kernel hands out ephemeral ports in turn).
int freePort() {
  Socket s;
  return s.bindAny(false);
}

std::string describe(const PreflightTable& t) {
  return "\n" + t.toText();
}

class Preflight : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stdfs::temp_directory_path() / ("fs_preflight_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::create_directories(dir_ / "runs");
    stdfs::create_directories(dir_ / "empty-bin");
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  // flamingo-train on the login PATH, like an installed engine.
  std::string enginePath() const { return kEngine.parent_path().string() + ":/usr/bin:/bin"; }

  PreflightRequest request(std::vector<ThisMachineHost*> hosts) const {
    PreflightRequest req;
    for (auto* h : hosts) req.hosts.push_back({h, ""});
    req.rendezvous_address = "127.0.0.1";
    req.rendezvous_port = freePort();
    req.run_root = (dir_ / "runs").string();
#ifndef FS_TEST_ENGINE
    req.require_engine = false;  // the tools-only flamingo-train probes as well as the full one
#endif
    req.connect_timeout_s = 30;
    req.connect_wait_s = 20;
    return req;
  }

  std::string writeScript(const std::string& name, const std::string& body) const {
    const auto p = dir_ / name;
    std::ofstream(p) << "#!/bin/sh\n" << body;
    stdfs::permissions(p, stdfs::perms::owner_all);
    return p.string();
  }

  stdfs::path dir_;
};

TEST_F(Preflight, TheTableForThisMachine) {
  ThisMachineHost node0("node0", enginePath()), node1("node1", enginePath());
  auto req = request({&node0, &node1});
  const PreflightTable t = fs::app::cluster::runPreflight(req);
  std::cout << describe(t);  // what a user would see, for the test log
  ASSERT_EQ(t.rows.size(), 10u) << describe(t);
  for (int node = 0; node < 2; ++node) {
    const std::string host = node == 0 ? "node0" : "node1";
    const auto* engine = t.find(node, CheckKind::kEngine);
    EXPECT_EQ(engine->status, CheckStatus::kOk) << describe(t);
    EXPECT_EQ(
        engine->value.rfind("protocol " + std::to_string(fs::protocol::kEventSchemaMajor) + " (engine ", 0),
        0u)
        << engine->value;
    const auto* disk = t.find(node, CheckKind::kDisk);
    EXPECT_NE(disk->status, CheckStatus::kSkipped);
    EXPECT_NE(disk->value.find(" free in " + req.run_root), std::string::npos) << disk->value;
    const auto* res = t.find(node, CheckKind::kResources);
    EXPECT_EQ(res->status, CheckStatus::kOk) << describe(t);
    EXPECT_NE(res->value.find(" cores"), std::string::npos) << res->value;
    // Both clocks are this machine's: the measured skew is within its uncertainty.
    const auto* clock = t.find(node, CheckKind::kClock);
    EXPECT_EQ(clock->status, CheckStatus::kOk) << describe(t);
    EXPECT_NE(clock->value.find(node == 0 ? "against this computer" : "against node0"), std::string::npos);
    const auto* rdv = t.find(node, CheckKind::kRendezvous);
    EXPECT_EQ(rdv->status, CheckStatus::kOk) << describe(t);
    EXPECT_EQ(rdv->value, "reaches 127.0.0.1:" + std::to_string(req.rendezvous_port));
    // Node 0 checks its own reach from inside its listener: no host runs two commands at once.
    EXPECT_EQ((node == 0 ? node0 : node1).maxConcurrentRuns(), 1);
    for (const auto* row : {engine, res, clock, rdv}) {
      EXPECT_EQ(row->host, host);
      EXPECT_TRUE(row->action.empty()) << row->action;
    }
  }
}

TEST_F(Preflight, MissingEngineNamesTheHostAndWhatToDo) {
  ThisMachineHost node0("node0", enginePath()), node1("node1", (dir_ / "empty-bin").string());
  auto req = request({&node0, &node1});
  req.hosts.push_back({&node1, "/opt/nowhere/flamingo-train"});
  const PreflightTable t = fs::app::cluster::runPreflight(req);
  EXPECT_FALSE(t.ok());
  const auto* byName = t.find(1, CheckKind::kEngine);
  EXPECT_EQ(byName->status, CheckStatus::kFail);
  EXPECT_EQ(byName->action,
            "node1: flamingo-train not found on the login PATH; set the engine path for this host");
  const auto* byPath = t.find(2, CheckKind::kEngine);
  EXPECT_EQ(byPath->status, CheckStatus::kFail);
  EXPECT_EQ(byPath->action,
            "node1: flamingo-train not found at /opt/nowhere/flamingo-train; correct the engine path for "
            "this host");
  for (CheckKind k : {CheckKind::kDisk, CheckKind::kResources, CheckKind::kClock, CheckKind::kRendezvous})
    EXPECT_EQ(t.find(1, k)->status, CheckStatus::kSkipped) << describe(t);
  // Node 0 still checks its own port.
  EXPECT_EQ(t.find(0, CheckKind::kRendezvous)->status, CheckStatus::kOk) << describe(t);
}

TEST_F(Preflight, RunRootWithoutPermission) {
  ThisMachineHost node0("node0", enginePath());
  auto req = request({&node0});
  req.run_root = "/proc/fs-preflight-runs";  // no file can be made under /proc, even by root
  const PreflightTable t = fs::app::cluster::runPreflight(req);
  const auto* disk = t.find(0, CheckKind::kDisk);
  EXPECT_EQ(disk->status, CheckStatus::kFail) << describe(t);
  EXPECT_NE(
      disk->action.find("node0: cannot write to the run root /proc/fs-preflight-runs (cannot create a file "
                        "in /proc"),
      std::string::npos)
      << disk->action;
  EXPECT_NE(disk->action.find("choose a run root this user can write"), std::string::npos);
}

TEST_F(Preflight, DiskThresholds) {
  fs::app::cluster::RowContext ctx{"node3", 3, ""};
  auto facts = [](std::uint64_t freeBytes, bool exists) {
    return nlohmann::json{{"run_root",
                           {{"path", "/scratch/runs"},
                            {"exists", exists},
                            {"writable", true},
                            {"free_path", exists ? "/scratch/runs" : "/scratch"},
                            {"free_bytes", freeBytes}}}};
  };
  auto plenty = fs::app::cluster::judgeDisk(ctx, facts(25'125'558'681ull, true));
  EXPECT_EQ(plenty.status, CheckStatus::kOk);
  EXPECT_EQ(plenty.value, "23.4 GiB free in /scratch/runs");
  auto later = fs::app::cluster::judgeDisk(ctx, facts(25'125'558'681ull, false));
  EXPECT_EQ(later.value, "23.4 GiB free in /scratch (/scratch/runs will be created)");
  auto low = fs::app::cluster::judgeDisk(ctx, facts(fs::app::cluster::kDiskWarnBytes - 1, true));
  EXPECT_EQ(low.status, CheckStatus::kWarn);
  EXPECT_EQ(low.action.rfind("node3: only 10.0 GiB free in /scratch/runs", 0), 0u) << low.action;
  auto full = fs::app::cluster::judgeDisk(ctx, facts(512u << 20, true));
  EXPECT_EQ(full.status, CheckStatus::kFail);
  EXPECT_EQ(full.value, "512.0 MiB free in /scratch/runs");
}

TEST_F(Preflight, ClockAndGpuJudgements) {
  fs::app::cluster::RowContext ctx{"node1", 1, ""};
  using fs::app::cluster::judgeClock;
  EXPECT_EQ(judgeClock(ctx, 0.8, 0.1, "node0").status, CheckStatus::kOk);
  EXPECT_EQ(judgeClock(ctx, 0.8, 0.1, "node0").value, "skew +0.8 s (+-0.1 s) against node0");
  EXPECT_EQ(judgeClock(ctx, 0.8, 0.01, "node0").value, "skew +0.8 s against node0");
  EXPECT_EQ(judgeClock(ctx, -2.5, 0.1, "node0").status, CheckStatus::kWarn);
  EXPECT_EQ(judgeClock(ctx, 2.5, 2.0, "node0").status, CheckStatus::kOk);  // within the measurement's reach
  const auto far = judgeClock(ctx, 45, 0.2, "node0");
  EXPECT_EQ(far.status, CheckStatus::kFail);
  EXPECT_NE(far.action.find("node1: the clock is +45.0 s off node0"), std::string::npos) << far.action;

  nlohmann::json facts = {
      {"cores", {{"online", 16}, {"usable", 16}}},
      {"gpus",
       {{"nvidia_smi", true},
        {"devices",
         {{{"index", 0}, {"name", "NVIDIA H100 80GB HBM3"}, {"memory_total_mib", 81559}},
          {{"index", 1}, {"name", "NVIDIA H100 80GB HBM3"}, {"memory_total_mib", 81559}}}}}}};
  auto two = fs::app::cluster::judgeResources(ctx, facts, 2);
  EXPECT_EQ(two.status, CheckStatus::kOk);
  EXPECT_EQ(two.value, "16 cores, 2 x NVIDIA H100 80GB HBM3");
  auto four = fs::app::cluster::judgeResources(ctx, facts, 4);
  EXPECT_EQ(four.status, CheckStatus::kFail);
  EXPECT_NE(four.action.find("the run needs 4 GPUs per node but this host has 2"), std::string::npos);
}

TEST_F(Preflight, ProtocolMajorMismatch) {
  const int other = fs::protocol::kEventSchemaMajor + 1;
  // Stands in for an engine of another protocol: its version JSON says so; probes are the real ones.
  const std::string fake =
      writeScript("old-engine",
                  "if [ \"$1\" = version ]; then\n  echo '{\"engine_version\":\"9.0.0\",\"protocol_major\":" +
                      std::to_string(other) + ",\"engine\":true}'\n  exit 0\nfi\nexec '" + kEngine.string() +
                      "' \"$@\"\n");
  ThisMachineHost node0("node0", enginePath()), node1("node1", enginePath());
  auto req = request({&node0, &node1});
  req.hosts[1].engine_path = fake;
  const PreflightTable t = fs::app::cluster::runPreflight(req);
  const auto* engine = t.find(1, CheckKind::kEngine);
  EXPECT_EQ(engine->status, CheckStatus::kFail) << describe(t);
  EXPECT_EQ(engine->value, "protocol " + std::to_string(other) + " (engine 9.0.0)");
  EXPECT_NE(engine->action.find("node1: the engine speaks protocol " + std::to_string(other) +
                                " (engine 9.0.0) but this Flamingo Studio speaks protocol " +
                                std::to_string(fs::protocol::kEventSchemaMajor)),
            std::string::npos)
      << engine->action;
  EXPECT_EQ(t.find(0, CheckKind::kEngine)->status, CheckStatus::kOk);

  // An engine from before `version --json`.
  req.hosts[1].engine_path =
      writeScript("older-engine", "echo \"flamingo-train version: takes no arguments\" >&2\nexit 2\n");
  const PreflightTable older = fs::app::cluster::runPreflight(req);
  EXPECT_NE(older.find(1, CheckKind::kEngine)->action.find("is older than this Flamingo Studio"),
            std::string::npos)
      << describe(older);
}

TEST_F(Preflight, RendezvousPortHeldByAnotherProgram) {
  Socket other;
  ThisMachineHost node0("node0", enginePath()), node1("node1", enginePath());
  auto req = request({&node0, &node1});
  req.rendezvous_port = other.bindAny(/*listen=*/true);
  ASSERT_GT(req.rendezvous_port, 0);
  const PreflightTable t = fs::app::cluster::runPreflight(req);
  const auto* listen = t.find(0, CheckKind::kRendezvous);
  EXPECT_EQ(listen->status, CheckStatus::kFail) << describe(t);
  EXPECT_NE(
      listen->action.find("node0: port " + std::to_string(req.rendezvous_port) + " is in use on this host"),
      std::string::npos)
      << listen->action;
  EXPECT_EQ(t.find(1, CheckKind::kRendezvous)->status, CheckStatus::kSkipped) << describe(t);
}

TEST_F(Preflight, RendezvousAddressWhereNothingListens) {
  // The listener takes IPv4 (0.0.0.0); an address of node 0 where nothing listens is its IPv6 loopback.
  std::ifstream inet6("/proc/net/if_inet6");
  const std::string addresses((std::istreambuf_iterator<char>(inet6)), std::istreambuf_iterator<char>());
  if (addresses.find("00000000000000000000000000000001") == std::string::npos)
    FS_FIXTURE_UNAVAILABLE("no IPv6 loopback (::1) on this machine");
  ThisMachineHost node0("node0", enginePath()), node1("node1", enginePath());
  auto req = request({&node0, &node1});
  req.rendezvous_address = "::1";
  req.connect_timeout_s = 5;  // node 1's check fails at once, then the listener waits this long for it
  req.connect_wait_s = 1;
  const PreflightTable t = fs::app::cluster::runPreflight(req);
  const std::string refused =
      "(connection refused: nothing listens on ::1:" + std::to_string(req.rendezvous_port);
  const auto* self = t.find(0, CheckKind::kRendezvous);
  EXPECT_EQ(self->status, CheckStatus::kFail) << describe(t);
  EXPECT_EQ(self->action.rfind("node0: cannot reach its own rendezvous address " + refused, 0), 0u)
      << self->action;
  const auto* other = t.find(1, CheckKind::kRendezvous);
  EXPECT_EQ(other->status, CheckStatus::kFail) << describe(t);
  EXPECT_EQ(other->action.rfind("node1: cannot reach node 0's rendezvous port " + refused, 0), 0u)
      << other->action;
  EXPECT_NE(
      other->action.find("let TCP port " + std::to_string(req.rendezvous_port) + " through any firewall"),
      std::string::npos);
}

TEST_F(Preflight, RendezvousAddressThatDropsPackets) {
  // 192.0.2.1 (TEST-NET-1, RFC 5737) is never routed: no connection, whatever the network.
  ThisMachineHost node0("node0", enginePath()), node1("node1", enginePath());
  auto req = request({&node0, &node1});
  req.rendezvous_address = "192.0.2.1";
  req.connect_timeout_s = 2;  // a hang guard: the packets go nowhere
  req.connect_wait_s = 0;
  const PreflightTable t = fs::app::cluster::runPreflight(req);
  const auto* row = t.find(1, CheckKind::kRendezvous);
  EXPECT_EQ(row->status, CheckStatus::kFail) << describe(t);
  EXPECT_EQ(row->value, "cannot reach 192.0.2.1:" + std::to_string(req.rendezvous_port));
  EXPECT_NE(row->action.find("node1: cannot reach node 0's rendezvous port"), std::string::npos)
      << row->action;
}

}  // namespace
