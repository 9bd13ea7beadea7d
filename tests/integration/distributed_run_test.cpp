// Whole distributed runs as a user starts them: `flamingo-train launch`
// (the node agent) and the real `torchrun` of the project's Python environment
// starting `flamingo-train train` ranks; two nodes in two network
// namespaces joined by veth; SIGTERM to the agent; a rank killed with -9; a
// node that never reaches the master.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "backend/protocol/wire/agent_events.h"
#include "backend/protocol/wire/run_dir.h"
#include "tests/backend/distributed/rank_processes.h"
#include "tests/backend/trainer/engine_test_util.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/integration/two_nodes.h"

namespace fs::integration {
namespace {

using fs::testing::RankExit;

const std::string kTrain = std::string(FS_BINARY_DIR) + "/bin/flamingo-train";

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::map<std::string, double>> stepLosses(const std::vector<protocol::Event>& events) {
  std::vector<std::map<std::string, double>> out;
  for (const auto& e : events) {
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) out.push_back(s->loss);
  }
  return out;
}

void expectSameLosses(const std::vector<std::map<std::string, double>>& a,
                      const std::vector<std::map<std::string, double>>& b, const std::string& what) {
  ASSERT_FALSE(a.empty()) << what;
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    for (const auto& [name, l] : a[i]) {
      EXPECT_NEAR(b[i].at(name), l, 1e-5 * std::abs(l)) << what << " step " << i + 1 << " " << name;
    }
  }
}

protocol::AgentEventFile agentEvents(const std::filesystem::path& dir, const std::string& node) {
  return protocol::decodeAgentEvents(readFile(dir / protocol::agentEventsFileName(node)));
}

class DistributedRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("fs-distrun-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(root_);
  }

  // Global batches of 8 LAION and 4 MMC4 samples over `world` ranks; LLaMA
  // shape (no dropout), so every world size trains the same run.
  std::filesystem::path writeConfig(const std::string& name, int world, std::vector<std::string> extra = {}) {
    std::vector<std::string> sets = {"model.lm.family=llama",
                                     "optim.epochs=1",
                                     "data.datasets[0].batch_size=" + std::to_string(8 / world),
                                     "data.datasets[0].samples_per_epoch=64",
                                     "data.datasets[1].batch_size=" + std::to_string(4 / world),
                                     "data.datasets[1].samples_per_epoch=32",
                                     "launch.threads_per_rank=1",
                                     "checkpoint.every_steps=0",
                                     "telemetry.interval_steps=1",
                                     "parallel.collective_timeout_s=60",
                                     "parallel.preflight_timeout_s=60"};
    sets.insert(sets.end(), extra.begin(), extra.end());
    const auto path = root_ / (name + ".yaml");
    EXPECT_TRUE(protocol::saveConfigFile(trainer::test::tinyConfig(sets), path.string()).isOk());
    return path;
  }

  pid_t start(const std::string& name, const std::vector<std::string>& argv,
              std::map<std::string, std::string> env = {}) {
    env["OMP_NUM_THREADS"] = "1";
    logs_.push_back(root_ / (name + ".out"));
    return fs::testing::spawnWithEnv(argv, env, logs_.back());
  }
  std::vector<RankExit> wait(const std::vector<pid_t>& pids, int seconds = 400) {
    std::vector<std::filesystem::path> logs(logs_.end() - static_cast<long>(pids.size()), logs_.end());
    return fs::testing::waitAll(pids, logs, std::chrono::seconds(seconds));
  }

  std::vector<std::string> agent(const std::filesystem::path& runDir, const std::filesystem::path& config,
                                 int port, int nnodes, int nproc, int nodeRank, const std::string& node,
                                 const std::string& master = "127.0.0.1") {
    return {kTrain,
            "launch",
            "--nnodes",
            std::to_string(nnodes),
            "--nproc-per-node",
            std::to_string(nproc),
            "--node-rank",
            std::to_string(nodeRank),
            "--master-addr",
            master,
            "--master-port",
            std::to_string(port),
            "--node-name",
            node,
            "--stop-grace-s",
            "60",
            "--run-dir",
            runDir.string(),
            "--",
            "train",
            "--config",
            config.string()};
  }

  std::filesystem::path root_;
  std::vector<std::filesystem::path> logs_;
};

TEST_F(DistributedRunTest, TheAgentAndTorchrunStartTheSameRun) {
  const auto config = writeConfig("two", 2);
  const auto viaAgent = root_ / "agent", viaTorchrun = root_ / "torchrun";
  auto a = wait({start("agent", agent(viaAgent, config, fs::testing::freePort(), 1, 2, 0, "n0"))});
  ASSERT_EQ(a[0].code, 0) << a[0].output;
  // torchrun is torch.distributed.run of the project's Python environment (FS_PYTHON).
  auto t = wait(
      {start("torchrun", {FS_PYTHON, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
                          "--master_port", std::to_string(fs::testing::freePort()), "--no_python", kTrain,
                          "train", "--config", config.string(), "--run-dir", viaTorchrun.string()})});
  ASSERT_EQ(t[0].code, 0) << t[0].output;
  const auto agentEventsRead = trainer::test::readEvents(viaAgent, true);
  const auto torchrunEvents = trainer::test::readEvents(viaTorchrun, true);
  expectSameLosses(stepLosses(agentEventsRead), stepLosses(torchrunEvents), "agent vs torchrun");
  for (const auto* events : {&agentEventsRead, &torchrunEvents}) {
    bool twoRanks = false;
    for (const auto& e : *events) {
      if (const auto* s = std::get_if<protocol::RunStartedEvent>(&e.body)) twoRanks = s->world_size == 2;
    }
    EXPECT_TRUE(twoRanks);
  }
  // The agent's own record: two ranks spawned, both exited 0.
  const auto file = agentEvents(viaAgent, "n0");
  int spawned = 0, clean = 0;
  for (const auto& e : file.events) {
    spawned += std::holds_alternative<protocol::RankSpawnedEvent>(e.body);
    if (const auto* x = std::get_if<protocol::RankExitedEvent>(&e.body)) clean += x->exit_code == 0;
  }
  EXPECT_EQ(spawned, 2);
  EXPECT_EQ(clean, 2);
}

TEST_F(DistributedRunTest, SigtermToTheAgentStopsEveryRankAfterACheckpoint) {
  const auto config = writeConfig(
      "long", 2, {"data.datasets[0].samples_per_epoch=8000", "data.datasets[1].samples_per_epoch=4000"});
  const auto dir = root_ / "run";
  const pid_t pid = start("agent", agent(dir, config, fs::testing::freePort(), 1, 2, 0, "n0"));
  trainer::test::waitForSteps(dir, 3);
  ::kill(pid, SIGTERM);
  auto exits = wait({pid});
  ASSERT_EQ(exits[0].code, 0) << exits[0].output;
  bool stopped = false, checkpoint = false;
  for (const auto& e : trainer::test::readEvents(dir, true)) {
    if (const auto* f = std::get_if<protocol::RunFinishedEvent>(&e.body))
      stopped = f->status == protocol::FinishStatus::kStopped;
    checkpoint = checkpoint || std::holds_alternative<protocol::CheckpointEvent>(e.body);
  }
  EXPECT_TRUE(stopped);
  EXPECT_TRUE(checkpoint);
  bool forwarded = false;
  for (const auto& e : agentEvents(dir, "n0").events) {
    if (const auto* f = std::get_if<protocol::SignalForwardedEvent>(&e.body))
      forwarded = f->signal == "SIGTERM";
  }
  EXPECT_TRUE(forwarded);
}

TEST_F(DistributedRunTest, AKilledRankIsNamedByTheAgentAndEveryProcessExits) {
  const auto config = writeConfig(
      "long", 2, {"data.datasets[0].samples_per_epoch=8000", "data.datasets[1].samples_per_epoch=4000"});
  const auto dir = root_ / "run";
  const pid_t pid = start("agent", agent(dir, config, fs::testing::freePort(), 1, 2, 0, "n0"));
  trainer::test::waitForSteps(dir, 3);
  int64_t rank1 = 0;
  for (const auto& e : agentEvents(dir, "n0").events) {
    if (const auto* s = std::get_if<protocol::RankSpawnedEvent>(&e.body); s && s->rank == 1) rank1 = s->pid;
  }
  ASSERT_GT(rank1, 0);
  ::kill(static_cast<pid_t>(rank1), SIGKILL);
  auto exits = wait({pid});
  EXPECT_NE(exits[0].code, 0);
  EXPECT_NE(exits[0].output.find("rank 1 (pid " + std::to_string(rank1) + ") was killed by SIGKILL"),
            std::string::npos)
      << exits[0].output;
  bool stopping = false;
  for (const auto& e : agentEvents(dir, "n0").events) {
    if (const auto* s = std::get_if<protocol::AgentStoppingEvent>(&e.body)) stopping = s->rank == 1;
  }
  EXPECT_TRUE(stopping);
  EXPECT_EQ(::kill(static_cast<pid_t>(rank1), 0), -1) << "rank 1 is gone";
}

TEST_F(DistributedRunTest, ANodeThatCannotReachTheMasterIsNamed) {
  const auto config = writeConfig("four", 4, {"parallel.preflight_timeout_s=8"});
  const auto dir = root_ / "run";
  const int port = fs::testing::freePort();
  const pid_t node0 = start("node0", agent(dir, config, port, 2, 2, 0, "n0"));
  const pid_t node1 =
      start("node1", agent(dir, config, fs::testing::freePort(), 2, 2, 1, "n1"));  // wrong port
  auto exits = wait({node0, node1});
  EXPECT_NE(exits[0].code, 0);
  EXPECT_NE(exits[1].code, 0);
  const std::string errors = trainer::test::errorMessages(trainer::test::readEvents(dir, true));
  EXPECT_NE(errors.find("rank 2 (node 1), rank 3 (node 1) did not join the rendezvous"), std::string::npos)
      << errors;
  const std::string rank2 = readFile(dir / "logs" / "rank-2.log");
  EXPECT_NE(rank2.find("could not reach the rendezvous"), std::string::npos) << rank2;
}

TEST_F(DistributedRunTest, TwoNodesInNetworkNamespacesTrainAsOneProcess) {
  const std::string ip = findIpProgram();
  ASSERT_FALSE(ip.empty()) << "iproute2's ip is needed (scripts/install-deps.sh installs it)";
  TwoNodes nodes(ip);
  if (!nodes.ok())
    FS_FIXTURE_UNAVAILABLE("cannot create network namespaces here (needs root / CAP_NET_ADMIN)");
  const auto single = root_ / "single";
  auto s = wait({start("single", {kTrain, "train", "--config", writeConfig("one", 1).string(), "--run-dir",
                                  single.string()})});
  ASSERT_EQ(s[0].code, 0) << s[0].output;
  const auto config = writeConfig("four", 4);
  const auto dir = root_ / "run";
  const int port = 29000 + ::getpid() % 1000;  // inside fresh namespaces every port is free
  const pid_t a =
      start("nodeA", nodes.in(true, agent(dir, config, port, 2, 2, 0, "a", nodes.masterAddress())));
  const pid_t b =
      start("nodeB", nodes.in(false, agent(dir, config, port, 2, 2, 1, "b", nodes.masterAddress())));
  auto exits = wait({a, b});
  ASSERT_EQ(exits[0].code, 0) << exits[0].output;
  ASSERT_EQ(exits[1].code, 0) << exits[1].output;
  expectSameLosses(stepLosses(trainer::test::readEvents(single, true)),
                   stepLosses(trainer::test::readEvents(dir, true)),
                   "1 process x 8 vs 2 nodes x 2 ranks x 2");
  for (const auto& node : {"a", "b"}) {
    int clean = 0;
    for (const auto& e : agentEvents(dir, node).events) {
      if (const auto* x = std::get_if<protocol::RankExitedEvent>(&e.body)) clean += x->exit_code == 0;
    }
    EXPECT_EQ(clean, 2) << "node " << node;
  }
  // Rank 2 (node b) joined from the second namespace's address.
  const std::string rank0 = readFile(dir / "logs" / "rank-0.log");
  EXPECT_NE(rank0.find("rank 2:"), std::string::npos) << rank0;
}

}  // namespace
}  // namespace fs::integration
