// Rendezvous and every collective with 1-4 real processes on loopback,
// checked against the naive definition on random tensors of odd sizes; the
// pre-flight naming a rank that never joins, a mismatching identity and an
// unreachable address; a dead and a stalled peer turning into errors that
// name the peer instead of a hang. The same over the shared-memory transport
// of ranks on one node (shm_communicator.h), with an arena small enough that
// large messages take the Gloo path and many collectives in flight wait for
// space; ranks that issue different collectives get an error, not wrong data.
//
// The parent tests run this binary again as rank processes (Worker.Run,
// selected by FS_TEST_ROLE); see rank_processes.h.
#include "backend/distributed/communicator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "backend/distributed/rendezvous.h"
#include "tests/backend/distributed/rank_processes.h"

namespace fs::distributed {
namespace {

std::string env(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}
int envInt(const char* name, int fallback) {
  return std::atoi(env(name, std::to_string(fallback)).c_str());
}
double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Every rank's input of one case, identical on every rank.
std::vector<torch::Tensor> inputsOf(int world, int caseId, int64_t n, torch::ScalarType dtype) {
  std::vector<torch::Tensor> out;
  for (int r = 0; r < world; ++r) {
    torch::manual_seed(1000 * caseId + r);
    out.push_back(dtype == torch::kInt64 ? torch::randint(-1000, 1000, {n}, torch::kInt64)
                                         : torch::randn({n}, torch::TensorOptions().dtype(dtype)));
  }
  return out;
}

torch::Tensor naiveReduce(const std::vector<torch::Tensor>& xs, ReduceOp op) {
  torch::Tensor acc = xs[0].clone();
  for (size_t i = 1; i < xs.size(); ++i) {
    if (op == ReduceOp::kSum) acc += xs[i];
    if (op == ReduceOp::kMax) acc = torch::maximum(acc, xs[i]);
    if (op == ReduceOp::kMin) acc = torch::minimum(acc, xs[i]);
  }
  return acc;
}

void expectClose(const torch::Tensor& got, const torch::Tensor& want, const std::string& what, bool exact) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.scalar_type(), want.scalar_type()) << what;
  if (exact || got.scalar_type() == torch::kInt64) {
    EXPECT_TRUE(torch::equal(got, want)) << what << ": max diff " << (got - want).abs().max().item<double>();
  } else {
    // A sum over ranks may add in another order (Gloo's ring; bfloat16 summed in float32 and rounded once):
    // a rounding step of the dtype.
    const bool half = got.scalar_type() == torch::kBFloat16 || got.scalar_type() == torch::kFloat16;
    const double tol = got.scalar_type() == torch::kBFloat16 ? 2e-2 : half ? 2e-3 : 1e-6;
    EXPECT_TRUE(torch::allclose(got.to(torch::kFloat64), want.to(torch::kFloat64), tol, tol))
        << what << ": max diff "
        << (got.to(torch::kFloat64) - want.to(torch::kFloat64)).abs().max().item<double>();
  }
}

void runCollectives(Communicator& c, int caseBase) {
  const int W = c.size(), r = c.rank();
  int caseId = caseBase;
  // bfloat16 and float16: FSDP's mixed precision gathers and reduces in them (NOTE [bfloat16 over Gloo]).
  for (torch::ScalarType dtype :
       {torch::kFloat32, torch::kFloat64, torch::kInt64, torch::kBFloat16, torch::kFloat16}) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1001}}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
        const auto xs = inputsOf(W, ++caseId, n, dtype);
        torch::Tensor t = xs[r].clone();
        c.allReduce(t, op, "test all_reduce");
        expectClose(t, naiveReduce(xs, op),
                    "all_reduce " + std::string(c10::toString(dtype)) + " case " + std::to_string(caseId),
                    op != ReduceOp::kSum);

        const auto big = inputsOf(W, ++caseId, n * W, dtype);
        torch::Tensor out = torch::full({n}, 77, torch::TensorOptions().dtype(dtype));
        c.reduceScatter(out, big[r], op, "test reduce_scatter");
        expectClose(out, naiveReduce(big, op).narrow(0, r * n, n),
                    "reduce_scatter case " + std::to_string(caseId), true);
      }
      const auto xs = inputsOf(W, ++caseId, n, dtype);
      torch::Tensor gathered = torch::zeros({n * W}, torch::TensorOptions().dtype(dtype));
      c.allGather(gathered, xs[r], "test all_gather");
      expectClose(gathered, torch::cat(xs), "all_gather case " + std::to_string(caseId), true);
      for (int root = 0; root < W; ++root) {
        torch::Tensor b = xs[r].clone();
        c.broadcast(b, root, "test broadcast");
        expectClose(b, xs[root], "broadcast from " + std::to_string(root), true);
      }
      torch::Tensor a = xs[r].clone();
      auto pending = c.allReduceAsync(a, ReduceOp::kSum, "test async");
      pending->wait();
      expectClose(a, naiveReduce(xs, ReduceOp::kSum), "async all_reduce", false);

      // Two gathers and a reduce-scatter in flight at once (FSDP's prefetch), waited in another order.
      const auto ys = inputsOf(W, ++caseId, n, dtype);
      const auto zs = inputsOf(W, ++caseId, n * W, dtype);
      torch::Tensor g1 = torch::zeros({n * W}, torch::TensorOptions().dtype(dtype));
      torch::Tensor g2 = torch::zeros({n * W}, torch::TensorOptions().dtype(dtype));
      torch::Tensor rs = torch::full({n}, 77, torch::TensorOptions().dtype(dtype));
      auto p1 = c.allGatherAsync(g1, xs[r], "test async all_gather 1");
      auto p2 = c.allGatherAsync(g2, ys[r], "test async all_gather 2");
      auto p3 = c.reduceScatterAsync(rs, zs[r], ReduceOp::kSum, "test async reduce_scatter");
      p3->wait();
      p2->wait();
      p1->wait();
      p1->wait();  // a second wait returns at once
      expectClose(g1, torch::cat(xs), "async all_gather 1 case " + std::to_string(caseId), true);
      expectClose(g2, torch::cat(ys), "async all_gather 2 case " + std::to_string(caseId), true);
      expectClose(rs, naiveReduce(zs, ReduceOp::kSum).narrow(0, r * n, n),
                  "async reduce_scatter case " + std::to_string(caseId), true);
    }
  }
  c.barrier("test barrier");
}

// More collectives in flight than the shared arena and descriptor ring hold,
// waited out of order: issuing must wait for space without deadlocking.
void runManyInFlight(Communicator& c) {
  const int W = c.size(), r = c.rank();
  std::vector<std::vector<torch::Tensor>> inputs;
  std::vector<torch::Tensor> outs;
  std::vector<std::unique_ptr<PendingCollective>> pending;
  for (int i = 0; i < 150; ++i) {
    inputs.push_back(inputsOf(W, 900000 + i, 1000, torch::kFloat32));
    if (i % 2 == 0) {
      outs.push_back(inputs.back()[r].clone());
      pending.push_back(c.allReduceAsync(outs.back(), ReduceOp::kSum, "in flight " + std::to_string(i)));
    } else {
      outs.push_back(torch::zeros({1000 * W}));
      pending.push_back(c.allGatherAsync(outs.back(), inputs.back()[r], "in flight " + std::to_string(i)));
    }
  }
  for (int i = 149; i >= 0; --i) pending[i]->wait();
  for (int i = 0; i < 150; ++i) {
    const auto want = i % 2 == 0 ? naiveReduce(inputs[i], ReduceOp::kSum) : torch::cat(inputs[i]);
    expectClose(outs[i], want, "in flight " + std::to_string(i), i % 2 != 0);
  }
}

// ---- the rank side -------------------------------------------------------------------------

TEST(Worker, Run) {
  const std::string role = env("FS_TEST_ROLE");
  if (role.empty()) GTEST_SKIP() << "only run as a rank process by the tests below";
  RendezvousOptions o;
  o.rank = envInt("FS_TEST_RANK", 0);
  o.world = envInt("FS_TEST_WORLD", 1);
  o.localWorld = envInt("FS_TEST_PER_NODE", o.world);
  o.masterPort = envInt("FS_TEST_PORT", 29500);
  o.identity = env("FS_TEST_IDENTITY", "v1 cafe");
  // Ranks on one host share memory; the other tests give each rank a host of its own, so they use Gloo alone.
  const bool shm = !env("FS_TEST_SHM").empty();
  o.host = shm ? std::string("test-host") : "rank" + std::to_string(o.rank) + "-host";
  o.sharedMemoryArenaBytes = static_cast<uint64_t>(envInt("FS_TEST_SHM_ARENA", 64 << 20));
  o.preflightTimeout = std::chrono::milliseconds(envInt("FS_TEST_PREFLIGHT_MS", 30000));
  o.collectiveTimeout = std::chrono::milliseconds(envInt("FS_TEST_TIMEOUT_MS", 60000));
  const auto joinStart = std::chrono::steady_clock::now();
  auto joined = joinRun(o);
  if (role == "preflight") {
    std::cout << "JOIN " << (joined ? "ok" : joined.status().message()) << std::endl;
    std::cout << "DETECT_S " << secondsSince(joinStart) << std::endl;  // rank 2 never started
    return;
  }
  ASSERT_TRUE(joined) << joined.status().message();
  Communicator& world = joined.value()->host();  // Gloo: the host group is the device group too
  std::cout << "TRANSPORT world " << world.transport() << std::endl;
  if (role == "collectives") {
    runCollectives(world, 0);
    runManyInFlight(world);
    const int perNode = o.localWorld;
    auto intra = world.split(intraNodeGroups(o.world, perNode), "intra");
    auto inter = world.split(interNodeGroups(o.world, perNode), "inter");
    std::cout << "TRANSPORT intra " << intra->transport() << std::endl;
    std::cout << "TRANSPORT inter " << inter->transport() << std::endl;
    ASSERT_EQ(intra->size(), perNode);
    ASSERT_EQ(intra->rank(), o.rank % perNode);
    ASSERT_EQ(inter->size(), o.world / perNode);
    ASSERT_EQ(inter->rank(), o.rank / perNode);
    runCollectives(*intra, 100000 * (1 + o.rank / perNode));
    runCollectives(*inter, 200000 * (1 + o.rank % perNode));
    runManyInFlight(*intra);
    world.barrier("done");
  } else if (role == "mismatch") {
    // Rank 1 gathers twice as much as rank 0.
    const int64_t n = o.rank == 0 ? 4 : 8;
    torch::Tensor all = torch::zeros({n * o.world});
    try {
      world.allGather(all, torch::ones({n}), "mismatched gather");
      std::cout << "MISMATCH ok" << std::endl;
    } catch (const CollectiveError& e) {
      std::cout << "MISMATCH " << e.what() << std::endl;
    }
    std::_Exit(0);
  } else if (role == "dead_peer" || role == "stalled_peer") {
    if (o.rank == 1) {
      if (role == "dead_peer") std::_Exit(0);  // no goodbye: the socket just closes
      std::this_thread::sleep_for(std::chrono::milliseconds(envInt("FS_TEST_STALL_MS", 8000)));
      std::_Exit(0);
    }
    torch::Tensor t = torch::ones({4});
    const auto collectiveStart = std::chrono::steady_clock::now();  // rank 1 is gone or asleep by now
    try {
      world.allReduce(t, ReduceOp::kSum, "after peer loss");
      std::cout << "COLLECTIVE ok" << std::endl;
    } catch (const CollectiveError& e) {
      std::cout << "COLLECTIVE " << e.what() << std::endl;
    }
    std::cout << "DETECT_S " << secondsSince(collectiveStart) << std::endl;
    // The gathers FSDP issues must fail as cleanly, waited or not.
    torch::Tensor all = torch::zeros({8});
    try {
      world.allGather(all, t, "gather after peer loss");
      std::cout << "GATHER ok" << std::endl;
    } catch (const CollectiveError& e) {
      std::cout << "GATHER " << e.what() << std::endl;
    }
    try {
      auto pending = world.allGatherAsync(all, t, "async gather after peer loss");
      pending->wait();
      std::cout << "ASYNC_GATHER ok" << std::endl;
    } catch (const CollectiveError& e) {
      std::cout << "ASYNC_GATHER " << e.what() << std::endl;
    }
    std::_Exit(0);  // the store's peers are gone: skip destructors that would wait on them
  }
}

// ---- the tests -----------------------------------------------------------------------------

// Prints the detection time a rank measured ("DETECT_S <seconds>" in its
// output) as "detection: <what>: <s> s (<settings>)"; printed, never asserted.
void printDetection(const std::string& output, const std::string& what, const std::string& settings) {
  const auto at = output.find("DETECT_S ");
  ASSERT_NE(at, std::string::npos) << output;
  const double s = std::stod(output.substr(at + 9));
  std::printf("detection: %s: %.2f s (%s)\n", what.c_str(), s, settings.c_str());
}

struct Launch {
  std::vector<pid_t> pids;
  std::vector<std::filesystem::path> logs;
};

class DistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("fs-dist-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Starts `ranks` of a world of `world` (ranks not listed never start).
  Launch start(const std::string& role, int world, const std::vector<int>& ranks,
               std::map<int, std::map<std::string, std::string>> extra = {}, int perNode = 0) {
    Launch l;
    const int port = fs::testing::freePort();
    for (int r : ranks) {
      std::map<std::string, std::string> e = {{"FS_TEST_ROLE", role},
                                              {"FS_TEST_RANK", std::to_string(r)},
                                              {"FS_TEST_WORLD", std::to_string(world)},
                                              {"FS_TEST_PER_NODE", std::to_string(perNode ? perNode : world)},
                                              {"FS_TEST_PORT", std::to_string(port)},
                                              {"OMP_NUM_THREADS", "1"}};
      for (const auto& [k, v] : extra[r]) e[k] = v;
      l.logs.push_back(dir_ / ("rank" + std::to_string(r) + ".log"));
      l.pids.push_back(fs::testing::spawnWithEnv(
          {"/proc/self/exe", "--gtest_filter=Worker.Run", "--gtest_color=no"}, e, l.logs.back()));
    }
    return l;
  }

  std::filesystem::path dir_;
};

void expectAllPassed(const std::vector<fs::testing::RankExit>& exits) {
  for (size_t r = 0; r < exits.size(); ++r) {
    EXPECT_EQ(exits[r].code, 0) << "rank " << r << " (signal " << exits[r].signal << "):\n"
                                << exits[r].output;
  }
}

TEST_F(DistTest, EveryCollectiveMatchesTheNaiveDefinitionForWorldOneToFour) {
  for (int world : {1, 2, 3, 4}) {
    std::vector<int> ranks;
    for (int r = 0; r < world; ++r) ranks.push_back(r);
    const int perNode = world == 4 ? 2 : 1;
    auto l = start("collectives", world, ranks, {}, perNode);
    SCOPED_TRACE("world " + std::to_string(world));
    expectAllPassed(fs::testing::waitAll(l.pids, l.logs, std::chrono::seconds(240)));
  }
}

TEST_F(DistTest, PreflightNamesTheRankThatNeverJoined) {
  std::map<int, std::map<std::string, std::string>> extra;
  // Long enough for rank 1 to start on a loaded machine; rank 2 never does.
  for (int r : {0, 1}) extra[r] = {{"FS_TEST_PREFLIGHT_MS", "10000"}};
  auto l = start("preflight", 3, {0, 1}, extra, 1);
  const auto exits = fs::testing::waitAll(l.pids, l.logs, std::chrono::seconds(60));
  ASSERT_EQ(exits[0].code, 0) << exits[0].output;
  EXPECT_NE(exits[0].output.find("pre-flight: rank 2 (node 2) did not join"), std::string::npos)
      << exits[0].output;
  EXPECT_NE(exits[0].output.find("rank 1 on rank1-host"), std::string::npos) << exits[0].output;
  printDetection(exits[0].output, "rank that never joins",
                 "pre-flight timeout 10 s here; default parallel.preflight_timeout_s 120 s");
}

TEST_F(DistTest, PreflightNamesARankWithAnotherIdentity) {
  std::map<int, std::map<std::string, std::string>> extra;
  extra[1] = {{"FS_TEST_IDENTITY", "v2 beef"}};
  auto l = start("preflight", 2, {0, 1}, extra);
  const auto exits = fs::testing::waitAll(l.pids, l.logs, std::chrono::seconds(60));
  ASSERT_EQ(exits[0].code, 0) << exits[0].output;
  EXPECT_NE(exits[0].output.find("rank 1 on rank1-host has 'v2 beef'"), std::string::npos) << exits[0].output;
}

TEST_F(DistTest, ARankThatCannotReachTheStoreSaysWhere) {
  std::map<int, std::map<std::string, std::string>> extra;
  extra[1] = {{"FS_TEST_PORT", std::to_string(fs::testing::freePort())}, {"FS_TEST_PREFLIGHT_MS", "1500"}};
  extra[0] = {{"FS_TEST_PREFLIGHT_MS", "1500"}};
  auto l = start("preflight", 2, {0, 1}, extra);
  const auto exits = fs::testing::waitAll(l.pids, l.logs, std::chrono::seconds(60));
  EXPECT_NE(exits[1].output.find("rank 1 on rank1-host could not reach the rendezvous at 127.0.0.1:"),
            std::string::npos)
      << exits[1].output;
  EXPECT_NE(exits[0].output.find("rank 1 (node 0) did not join"), std::string::npos) << exits[0].output;
}

TEST_F(DistTest, ADeadPeerIsAnErrorNotAHang) {
  auto l = start("dead_peer", 2, {0, 1});
  const auto exits = fs::testing::waitAll(l.pids, l.logs, std::chrono::seconds(120));
  ASSERT_EQ(exits[0].code, 0) << exits[0].output;
  EXPECT_NE(exits[0].output.find("COLLECTIVE all_reduce #"), std::string::npos) << exits[0].output;
  EXPECT_NE(exits[0].output.find("(after peer loss) failed on rank 0 of 2"), std::string::npos)
      << exits[0].output;
  EXPECT_NE(exits[0].output.find("GATHER all_gather #"), std::string::npos) << exits[0].output;
  EXPECT_NE(exits[0].output.find("(gather after peer loss) failed on rank 0 of 2"), std::string::npos)
      << exits[0].output;
  EXPECT_NE(exits[0].output.find("ASYNC_GATHER all_gather #"), std::string::npos) << exits[0].output;
  EXPECT_NE(exits[0].output.find("(async gather after peer loss) failed on rank 0 of 2"), std::string::npos)
      << exits[0].output;
  printDetection(exits[0].output, "killed rank (Gloo)",
                 "the closed connection; no timeout involved, collective timeout 60 s here, default 600 s");
}

TEST_F(DistTest, AStalledPeerIsNamedWithItsLastCollective) {
  std::map<int, std::map<std::string, std::string>> extra;
  extra[0] = {{"FS_TEST_TIMEOUT_MS", "2000"}};
  extra[1] = {{"FS_TEST_TIMEOUT_MS", "2000"}, {"FS_TEST_STALL_MS", "10000"}};
  auto l = start("stalled_peer", 2, {0, 1}, extra);
  const auto exits = fs::testing::waitAll(l.pids, l.logs, std::chrono::seconds(120));
  ASSERT_EQ(exits[0].code, 0) << exits[0].output;
  EXPECT_NE(exits[0].output.find("failed on rank 0 of 2"), std::string::npos) << exits[0].output;
  EXPECT_NE(exits[0].output.find("peers: rank 1: last left #1 'all_reduce pre-flight confirm'"),
            std::string::npos)
      << exits[0].output;
  // The gathers time out too (2 s each), rather than waiting for the peer.
  EXPECT_NE(exits[0].output.find("(gather after peer loss) failed on rank 0 of 2"), std::string::npos)
      << exits[0].output;
  EXPECT_NE(exits[0].output.find("(async gather after peer loss) failed on rank 0 of 2"), std::string::npos)
      << exits[0].output;
  printDetection(exits[0].output, "stalled rank (Gloo)",
                 "collective timeout 2 s here; default parallel.collective_timeout_s 600 s");
}

std::map<int, std::map<std::string, std::string>> sharedMemoryEnv(
    int world, int arenaBytes, std::map<std::string, std::string> more = {}) {
  std::map<int, std::map<std::string, std::string>> extra;
  for (int r = 0; r < world; ++r) {
    extra[r] = more;
    extra[r]["FS_TEST_SHM"] = "1";
    extra[r]["FS_TEST_SHM_ARENA"] = std::to_string(arenaBytes);
  }
  return extra;
}

// Segments a process created and left named in /dev/shm ("/fs-<pid>-...").
std::vector<std::string> leftoverSegments(const std::vector<pid_t>& pids) {
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = e.path().filename().string();
    for (pid_t p : pids) {
      if (name.rfind("fs-" + std::to_string(p) + "-", 0) == 0) left.push_back(name);
    }
  }
  return left;
}

TEST_F(DistTest, SharedMemoryCarriesTheCollectivesOfOneNode) {
  // 16 KiB arenas: messages over 8 KiB (the 1001-element cases of wide dtypes) go over Gloo, the rest
  // through the segment, in one stream of collectives.
  for (const auto& [world, perNode] : std::vector<std::pair<int, int>>{{2, 2}, {3, 3}, {4, 2}}) {
    SCOPED_TRACE("world " + std::to_string(world) + ", " + std::to_string(perNode) + " per node");
    std::vector<int> ranks;
    for (int r = 0; r < world; ++r) ranks.push_back(r);
    auto l = start("collectives", world, ranks, sharedMemoryEnv(world, 16384), perNode);
    const auto exits = fs::testing::waitAll(l.pids, l.logs, std::chrono::seconds(240));
    expectAllPassed(exits);
    const std::string& out = exits[0].output;
    if (perNode == world) {
      EXPECT_NE(out.find("TRANSPORT world gloo + shared memory"), std::string::npos) << out;
    } else {
      EXPECT_NE(
          out.find("TRANSPORT world gloo (no shared memory: group rank 2 is on node 1 on test-host, this "
                   "rank on node 0 on test-host)"),
          std::string::npos)
          << out;
      EXPECT_NE(out.find("TRANSPORT inter gloo (no shared memory"), std::string::npos) << out;
    }
    EXPECT_NE(out.find("TRANSPORT intra gloo + shared memory"), std::string::npos) << out;
    EXPECT_TRUE(leftoverSegments(l.pids).empty()) << leftoverSegments(l.pids).front();
  }
}

TEST_F(DistTest, RanksOnSeparateHostsKeepToGloo) {
  auto l = start("collectives", 2, {0, 1});
  const auto exits = fs::testing::waitAll(l.pids, l.logs, std::chrono::seconds(240));
  expectAllPassed(exits);
  EXPECT_NE(
      exits[0].output.find("TRANSPORT world gloo (no shared memory: group rank 1 is on node 0 on rank1-host, "
                           "this rank on node 0 on rank0-host)"),
      std::string::npos)
      << exits[0].output;
}

TEST_F(DistTest, ADeadPeerOnSharedMemoryIsNamed) {
  auto l = start("dead_peer", 2, {0, 1}, sharedMemoryEnv(2, 1 << 20));
  const auto exits = fs::testing::waitAll(l.pids, l.logs, std::chrono::seconds(120));
  ASSERT_EQ(exits[0].code, 0) << exits[0].output;
  const std::string& out = exits[0].output;
  EXPECT_NE(out.find("TRANSPORT world gloo + shared memory"), std::string::npos) << out;
  EXPECT_NE(out.find("(after peer loss) failed on rank 0 of 2: shared memory: rank 1 (pid " +
                     std::to_string(l.pids[1]) + ") exited while this rank waited for rank(s) 1 to join it"),
            std::string::npos)
      << out;
  // Later collectives fail at once with the same cause.
  EXPECT_NE(
      out.find("(gather after peer loss) failed on rank 0 of 2: an earlier collective failed: shared memory: "
               "rank 1 (pid"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("(async gather after peer loss) failed on rank 0 of 2"), std::string::npos) << out;
  printDetection(out, "killed rank (shared memory)",
                 "the peer's pid checked every 0.1 s; no timeout involved");
}

TEST_F(DistTest, AStalledPeerOnSharedMemoryTimesOutNamingIt) {
  auto extra = sharedMemoryEnv(2, 1 << 20, {{"FS_TEST_TIMEOUT_MS", "2000"}});
  extra[1]["FS_TEST_STALL_MS"] = "10000";
  auto l = start("stalled_peer", 2, {0, 1}, extra);
  const auto exits = fs::testing::waitAll(l.pids, l.logs, std::chrono::seconds(120));
  ASSERT_EQ(exits[0].code, 0) << exits[0].output;
  const std::string& out = exits[0].output;
  EXPECT_NE(
      out.find("(after peer loss) failed on rank 0 of 2: shared memory: timed out after 2 s waiting for "
               "rank(s) 1 to join it; peers: rank 1: last left #1 'all_reduce pre-flight confirm'"),
      std::string::npos)
      << out;
  printDetection(out, "stalled rank (shared memory)",
                 "collective timeout 2 s here; default parallel.collective_timeout_s 600 s");
}

TEST_F(DistTest, RanksIssuingDifferentCollectivesGetAnError) {
  auto l = start("mismatch", 2, {0, 1}, sharedMemoryEnv(2, 1 << 20));
  const auto exits = fs::testing::waitAll(l.pids, l.logs, std::chrono::seconds(120));
  for (int r : {0, 1}) {
    ASSERT_EQ(exits[r].code, 0) << exits[r].output;
    EXPECT_NE(exits[r].output.find("(mismatched gather) failed on rank " + std::to_string(r) + " of 2"),
              std::string::npos)
        << exits[r].output;
  }
  EXPECT_NE(
      exits[0].output.find("rank 1 published 32 bytes as collective 1, expected 16 bytes as 1: the ranks "
                           "issued different collectives"),
      std::string::npos)
      << exits[0].output;
}

}  // namespace
}  // namespace fs::distributed
