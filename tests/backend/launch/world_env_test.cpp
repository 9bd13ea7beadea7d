#include "backend/launch/world_env.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/launch/node_agent.h"
#include "backend/protocol/config/launch_env.h"

namespace fs::launch {
namespace {

using Env = std::map<std::string, std::string>;

WorldInfo discover(const Env& env, const WorldFlags& flags = {}) {
  auto w = discoverWorld(env, flags);
  EXPECT_TRUE(w.isOk()) << w.status().message();
  return w.isOk() ? w.value() : WorldInfo{};
}

// The error message, which must mention every piece of `names`.
void expectError(const Env& env, const std::vector<std::string>& names, const WorldFlags& flags = {}) {
  auto w = discoverWorld(env, flags);
  ASSERT_FALSE(w.isOk()) << "expected an error naming " << names.front();
  EXPECT_EQ(w.status().code(), protocol::Status::Code::kInvalidArgument);
  for (const auto& n : names)
    EXPECT_NE(w.status().message().find(n), std::string::npos) << w.status().message();
}

std::vector<std::string> hosts(std::string_view list) {
  auto h = expandSlurmHostlist(list);
  EXPECT_TRUE(h.isOk()) << h.status().message();
  return h.isOk() ? h.value() : std::vector<std::string>{};
}

// ---- whole launcher environments ------------------------------------------------------

TEST(WorldEnvTest, NothingSetIsOneProcess) {
  WorldInfo w = discover({{"PATH", "/bin"}});
  EXPECT_EQ(w.source, "single");
  EXPECT_EQ(w.rank, 0);
  EXPECT_EQ(w.worldSize, 1);
  EXPECT_EQ(w.localRank, 0);
  EXPECT_EQ(w.localWorldSize, 1);
  EXPECT_EQ(w.nodeRank, 0);
  EXPECT_EQ(w.masterAddr, "127.0.0.1");
  EXPECT_EQ(w.masterPort, 29500);
  EXPECT_FALSE(w.host.empty());
}

TEST(WorldEnvTest, Torchrun) {
  WorldInfo w = discover({{"RANK", "5"},
                          {"LOCAL_RANK", "1"},
                          {"WORLD_SIZE", "8"},
                          {"LOCAL_WORLD_SIZE", "4"},
                          {"GROUP_RANK", "1"},
                          {"MASTER_ADDR", "node-a"},
                          {"MASTER_PORT", "1234"}});
  EXPECT_EQ(w, (WorldInfo{5, 1, 8, 4, 1, "node-a", 1234, "torchrun", w.host}));
}

TEST(WorldEnvTest, NodeRankFallsBackToRankOverLocalWorld) {
  WorldInfo w = discover({{"RANK", "6"},
                          {"LOCAL_RANK", "2"},
                          {"WORLD_SIZE", "8"},
                          {"LOCAL_WORLD_SIZE", "4"},
                          {"MASTER_ADDR", "a"}});
  EXPECT_EQ(w.nodeRank, 1);
  EXPECT_EQ(discover({{"RANK", "6"}, {"WORLD_SIZE", "8"}, {"NODE_RANK", "3"}, {"MASTER_ADDR", "a"}}).nodeRank,
            3);
}

TEST(WorldEnvTest, SlurmWithHostlistAndDefaultPort) {
  WorldInfo w = discover({{"SLURM_PROCID", "5"},
                          {"SLURM_LOCALID", "1"},
                          {"SLURM_NTASKS", "8"},
                          {"SLURM_TASKS_PER_NODE", "4(x2)"},
                          {"SLURM_NODEID", "1"},
                          {"SLURM_JOB_NODELIST", "gpu[07-08]"}});
  EXPECT_EQ(w, (WorldInfo{5, 1, 8, 4, 1, "gpu07", 29500, "slurm", w.host}));
  // SLURM_NODELIST when SLURM_JOB_NODELIST is absent; MASTER_ADDR beats both.
  EXPECT_EQ(discover({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "x[3-4]"}}).masterAddr,
            "x3");
  EXPECT_EQ(discover({{"SLURM_PROCID", "0"},
                      {"SLURM_NTASKS", "2"},
                      {"SLURM_JOB_NODELIST", "x[3-4]"},
                      {"MASTER_ADDR", "10.0.0.9"}})
                .masterAddr,
            "10.0.0.9");
}

TEST(WorldEnvTest, SlurmTasksPerNodePicksThisNode) {
  Env env = {{"SLURM_PROCID", "6"}, {"SLURM_LOCALID", "0"},
             {"SLURM_NTASKS", "7"}, {"SLURM_TASKS_PER_NODE", "3(x2),1"},
             {"SLURM_NODEID", "2"}, {"SLURM_JOB_NODELIST", "n[1-3]"}};
  EXPECT_EQ(discover(env).localWorldSize, 1);
  env["SLURM_NODEID"] = "0";
  env["SLURM_PROCID"] = "1";
  env["SLURM_LOCALID"] = "1";
  EXPECT_EQ(discover(env).localWorldSize, 3);
  // SLURM_NTASKS_PER_NODE (the user's --ntasks-per-node) comes first.
  env["SLURM_NTASKS_PER_NODE"] = "2";
  EXPECT_EQ(discover(env).localWorldSize, 2);
  env.erase("SLURM_NTASKS_PER_NODE");
  env.erase("SLURM_NODEID");
  expectError(env, {"SLURM_TASKS_PER_NODE=3(x2),1", "SLURM_NODEID"});
  env["SLURM_TASKS_PER_NODE"] = "3(x)";
  expectError(env, {"SLURM_TASKS_PER_NODE", "'3(x)'"});
}

TEST(WorldEnvTest, SlurmBatchScriptIsTaskZeroOfOne) {
  WorldInfo w = discover({{"SLURM_PROCID", "0"}, {"SLURM_JOB_NODELIST", "n1"}});
  EXPECT_EQ(w.source, "slurm");
  EXPECT_EQ(w.worldSize, 1);
  expectError({{"SLURM_PROCID", "2"}}, {"SLURM_PROCID=2", "world size 1 (default)"});
}

TEST(WorldEnvTest, Pmi) {
  WorldInfo w = discover({{"PMI_RANK", "3"},
                          {"PMI_SIZE", "4"},
                          {"MPI_LOCALRANKID", "1"},
                          {"MPI_LOCALNRANKS", "2"},
                          {"MASTER_ADDR", "h0"}});
  EXPECT_EQ(w, (WorldInfo{3, 1, 4, 2, 1, "h0", 29500, "pmi", w.host}));
}

TEST(WorldEnvTest, OpenMpi) {
  WorldInfo w = discover({{"OMPI_COMM_WORLD_RANK", "2"},
                          {"OMPI_COMM_WORLD_SIZE", "3"},
                          {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                          {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
                          {"OMPI_COMM_WORLD_NODE_RANK", "0"},
                          {"MASTER_ADDR", "h0"},
                          {"MASTER_PORT", "40000"}});
  EXPECT_EQ(w, (WorldInfo{2, 2, 3, 3, 0, "h0", 40000, "openmpi", w.host}));
}

TEST(WorldEnvTest, SrunThenTorchrunIsNoContradiction) {
  // srun started one torchrun per node (task 1 of 2); torchrun started this rank.
  WorldInfo w = discover({{"SLURM_PROCID", "1"},
                          {"SLURM_LOCALID", "0"},
                          {"SLURM_NTASKS", "2"},
                          {"SLURM_TASKS_PER_NODE", "1(x2)"},
                          {"SLURM_NODEID", "1"},
                          {"SLURM_JOB_NODELIST", "gpu[1-2]"},
                          {"RANK", "6"},
                          {"LOCAL_RANK", "2"},
                          {"WORLD_SIZE", "8"},
                          {"LOCAL_WORLD_SIZE", "4"},
                          {"GROUP_RANK", "1"},
                          {"MASTER_ADDR", "gpu1"},
                          {"MASTER_PORT", "29400"}});
  EXPECT_EQ(w, (WorldInfo{6, 2, 8, 4, 1, "gpu1", 29400, "torchrun", w.host}));
}

// ---- precedence, one chain at a time ---------------------------------------------------

TEST(WorldEnvTest, RankAndWorldPrecedence) {
  Env all = {{"RANK", "1"},
             {"WORLD_SIZE", "11"},
             {"PMI_RANK", "2"},
             {"PMI_SIZE", "12"},
             {"SLURM_PROCID", "3"},
             {"SLURM_NTASKS", "13"},
             {"OMPI_COMM_WORLD_RANK", "4"},
             {"OMPI_COMM_WORLD_SIZE", "14"},
             {"MASTER_ADDR", "m"}};
  const std::vector<std::tuple<std::string, std::string, std::string, int, int>> order = {
      {"RANK", "WORLD_SIZE", "torchrun", 1, 11},
      {"PMI_RANK", "PMI_SIZE", "pmi", 2, 12},
      {"SLURM_PROCID", "SLURM_NTASKS", "slurm", 3, 13},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "openmpi", 4, 14},
  };
  for (const auto& [rankVar, sizeVar, source, rank, size] : order) {
    WorldInfo w = discover(all);
    EXPECT_EQ(w.source, source);
    EXPECT_EQ(w.rank, rank) << rankVar;
    EXPECT_EQ(w.worldSize, size) << sizeVar;
    all.erase(rankVar);
    all.erase(sizeVar);
  }
}

TEST(WorldEnvTest, LocalRankPrecedence) {
  Env env = {{"RANK", "0"},
             {"WORLD_SIZE", "8"},
             {"LOCAL_WORLD_SIZE", "8"},
             {"LOCAL_RANK", "1"},
             {"MPI_LOCALRANKID", "2"},
             {"SLURM_LOCALID", "3"},
             {"OMPI_COMM_WORLD_LOCAL_RANK", "4"},
             {"MASTER_ADDR", "m"}};
  int expected = 1;
  for (const char* var : {"LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    EXPECT_EQ(discover(env).localRank, expected++) << var;
    env.erase(var);
  }
  EXPECT_EQ(discover(env).localRank, 0) << "no variable: 0";
}

TEST(WorldEnvTest, LocalWorldPrecedence) {
  Env env = {{"RANK", "0"},
             {"WORLD_SIZE", "8"},
             {"LOCAL_WORLD_SIZE", "1"},
             {"MPI_LOCALNRANKS", "2"},
             {"SLURM_NTASKS_PER_NODE", "3"},
             {"SLURM_TASKS_PER_NODE", "4"},
             {"OMPI_COMM_WORLD_LOCAL_SIZE", "5"},
             {"MASTER_ADDR", "m"}};
  int expected = 1;
  for (const char* var : {"LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE",
                          "SLURM_TASKS_PER_NODE", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
    EXPECT_EQ(discover(env).localWorldSize, expected++) << var;
    env.erase(var);
  }
  EXPECT_EQ(discover(env).localWorldSize, 1) << "no local variable at all: alone on the node";
  env["LOCAL_RANK"] = "3";
  EXPECT_EQ(discover(env).localWorldSize, 8) << "local rank without local world: the world bounds it";
}

TEST(WorldEnvTest, NodeRankPrecedence) {
  Env env = {{"RANK", "0"},      {"WORLD_SIZE", "1"},   {"GROUP_RANK", "1"},
             {"NODE_RANK", "2"}, {"SLURM_NODEID", "3"}, {"OMPI_COMM_WORLD_NODE_RANK", "4"}};
  int expected = 1;
  for (const char* var : {"GROUP_RANK", "NODE_RANK", "SLURM_NODEID", "OMPI_COMM_WORLD_NODE_RANK"}) {
    EXPECT_EQ(discover(env).nodeRank, expected++) << var;
    env.erase(var);
  }
}

// ---- flags -----------------------------------------------------------------------------

TEST(WorldEnvTest, FlagsAloneDescribeTheWorld) {
  WorldFlags f;
  f.rank = 1;
  f.worldSize = 2;
  f.localRank = 1;
  f.localWorldSize = 2;
  f.masterAddr = "10.1.1.1";
  f.masterPort = 5000;
  WorldInfo w = discover({}, f);
  EXPECT_EQ(w, (WorldInfo{1, 1, 2, 2, 0, "10.1.1.1", 5000, "flags", w.host}));
}

TEST(WorldEnvTest, FlagsThatAgreeAreFine) {
  WorldFlags f;
  f.rank = 0;
  f.worldSize = 2;
  f.masterPort = 29500;
  WorldInfo w =
      discover({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "29500"}}, f);
  EXPECT_EQ(w.source, "torchrun");
  // A flag fills what the environment leaves out.
  WorldFlags local;
  local.localRank = 1;
  local.localWorldSize = 2;
  EXPECT_EQ(discover({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}}, local).localRank, 1);
  // --master-addr beats the SLURM node list (which is not a variable naming the master).
  WorldFlags m;
  m.masterAddr = "login1";
  EXPECT_EQ(discover({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n[1-2]"}}, m)
                .masterAddr,
            "login1");
}

TEST(WorldEnvTest, FlagDisagreeingWithEnvNamesBoth) {
  Env env = {{"RANK", "0"},        {"WORLD_SIZE", "2"},     {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"},
             {"MASTER_ADDR", "m"}, {"MASTER_PORT", "29500"}};
  WorldFlags f;
  f.rank = 1;
  expectError(env, {"--rank 1 but RANK=0"}, f);
  f = {};
  f.worldSize = 4;
  expectError(env, {"--world-size 4 but WORLD_SIZE=2"}, f);
  f = {};
  f.localRank = 1;
  expectError(env, {"--local-rank 1 but LOCAL_RANK=0"}, f);
  f = {};
  f.localWorldSize = 1;
  expectError(env, {"--local-world-size 1 but LOCAL_WORLD_SIZE=2"}, f);
  f = {};
  f.masterAddr = "other";
  expectError(env, {"--master-addr other but MASTER_ADDR=m"}, f);
  f = {};
  f.masterPort = 1;
  expectError(env, {"--master-port 1 but MASTER_PORT=29500"}, f);
  // The variable the figure comes from is the one compared: SLURM_PROCID under torchrun is not.
  f = {};
  f.rank = 0;
  env["SLURM_PROCID"] = "1";
  env["SLURM_NTASKS"] = "2";
  EXPECT_TRUE(discoverWorld(env, f).isOk());
  f.rank = 1;
  expectError(env, {"--rank 1 but RANK=0"}, f);
}

TEST(WorldEnvTest, FlagsOnlyPartlyGiven) {
  WorldFlags f;
  f.rank = 0;
  expectError({}, {"--rank 0", "--world-size"}, f);
  f = {};
  f.worldSize = 2;
  expectError({}, {"--world-size 2", "--rank"}, f);
  f.rank = 1;
  expectError({}, {"no master address", "--world-size 2"}, f);
  f.masterPort = 70000;
  f.masterAddr = "m";
  expectError({}, {"--master-port 70000", "1..65535"}, f);
}

// ---- contradictions --------------------------------------------------------------------

TEST(WorldEnvTest, NonNumericValuesNameTheVariable) {
  expectError({{"RANK", "one"}, {"WORLD_SIZE", "2"}}, {"RANK='one'", "non-negative integer"});
  expectError({{"RANK", "0"}, {"WORLD_SIZE", "0"}}, {"WORLD_SIZE='0'", "positive integer"});
  expectError({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}, {"RANK='-1'"});
  expectError({{"RANK", " 1"}, {"WORLD_SIZE", "2"}}, {"RANK=' 1'"});
  expectError({{"RANK", "0"}, {"WORLD_SIZE", "99999999999999999999"}}, {"WORLD_SIZE"});
  expectError({{"LOCAL_RANK", ""}}, {"LOCAL_RANK=''"});
  expectError({{"MASTER_PORT", "http"}}, {"MASTER_PORT='http'"});
  expectError({{"MASTER_PORT", "70000"}}, {"MASTER_PORT=70000", "1..65535"});
  expectError({{"GROUP_RANK", "x"}}, {"GROUP_RANK='x'"});
  expectError({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", ""}}, {"MASTER_ADDR", "empty"});
}

TEST(WorldEnvTest, FamilyOnlyPartlyPresent) {
  expectError({{"RANK", "0"}}, {"RANK=0 is set but WORLD_SIZE is not"});
  expectError({{"WORLD_SIZE", "2"}}, {"WORLD_SIZE=2 is set but RANK is not"});
  expectError({{"PMI_RANK", "0"}}, {"PMI_RANK=0", "PMI_SIZE"});
  expectError({{"OMPI_COMM_WORLD_SIZE", "2"}}, {"OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK"});
  expectError({{"SLURM_NTASKS", "4"}}, {"SLURM_NTASKS=4", "SLURM_PROCID", "srun"});
  // RANK with another launcher's world size is not a pair.
  expectError({{"RANK", "1"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}},
              {"RANK=1 is set but WORLD_SIZE is not", "SLURM_NTASKS=4"});
}

TEST(WorldEnvTest, RanksOutsideTheirWorlds) {
  expectError({{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "m"}}, {"RANK=4", "WORLD_SIZE=4"});
  expectError({{"RANK", "0"},
               {"WORLD_SIZE", "4"},
               {"LOCAL_RANK", "2"},
               {"LOCAL_WORLD_SIZE", "2"},
               {"MASTER_ADDR", "m"}},
              {"LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"});
  expectError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "4"}, {"MASTER_ADDR", "m"}},
              {"LOCAL_WORLD_SIZE=4", "WORLD_SIZE=2"});
  expectError({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "5"}, {"MASTER_ADDR", "m"}},
              {"LOCAL_RANK=5", "local world size 4 (default)"});
}

TEST(WorldEnvTest, WorldWithoutMaster) {
  expectError({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, {"WORLD_SIZE=2", "no master address", "MASTER_ADDR"});
  expectError({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n[2-1]"}},
              {"SLURM_JOB_NODELIST", "n[2-1]"});
  expectError({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", ""}},
              {"SLURM_JOB_NODELIST", "names no host"});
}

// ---- SLURM host lists ------------------------------------------------------------------

TEST(SlurmHostlistTest, PlainNamesAndSeparators) {
  EXPECT_EQ(hosts("node1"), (std::vector<std::string>{"node1"}));
  EXPECT_EQ(hosts("a,b c\tdd"), (std::vector<std::string>{"a", "b", "c", "dd"}));
  EXPECT_EQ(hosts(",a,,b,"), (std::vector<std::string>{"a", "b"}))
      << "empty entries are skipped, as SLURM does";
  EXPECT_EQ(hosts("node007,n-1.cluster"), (std::vector<std::string>{"node007", "n-1.cluster"}));
  EXPECT_TRUE(hosts("").empty());
}

TEST(SlurmHostlistTest, RangesAndPadding) {
  EXPECT_EQ(hosts("node[01-03,07]"), (std::vector<std::string>{"node01", "node02", "node03", "node07"}));
  EXPECT_EQ(hosts("n[8-11]"), (std::vector<std::string>{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(hosts("n[098-101]"), (std::vector<std::string>{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(hosts("n[1-010]").back(), "n10") << "the first number's width pads every number";
  EXPECT_EQ(hosts("n[5]"), (std::vector<std::string>{"n5"}));
  EXPECT_EQ(hosts("[1-2]"), (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(hosts("gpu[3,1]"), (std::vector<std::string>{"gpu3", "gpu1"})) << "order as written";
}

TEST(SlurmHostlistTest, SeveralEntriesAndGroups) {
  EXPECT_EQ(hosts("a[1-2],b,c[10-11]"), (std::vector<std::string>{"a1", "a2", "b", "c10", "c11"}));
  EXPECT_EQ(hosts("a[1-2]-ib[3-4]"), (std::vector<std::string>{"a1-ib3", "a1-ib4", "a2-ib3", "a2-ib4"}));
  EXPECT_EQ(hosts("r[1-2]n[01-02]"), (std::vector<std::string>{"r1n01", "r1n02", "r2n01", "r2n02"}));
  // Three groups: SLURM expands the middle one outermost (its _push_range_list recursion).
  EXPECT_EQ(hosts("a[1-2]b[3-4]c[5-6]"), (std::vector<std::string>{"a1b3c5", "a1b3c6", "a2b3c5", "a2b3c6",
                                                                   "a1b4c5", "a1b4c6", "a2b4c5", "a2b4c6"}));
}

TEST(SlurmHostlistTest, InvalidTextIsRejectedAndQuoted) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"node[1-3", "'[' without ']'"},
      {"node1-3]", "']' without '['"},
      {"node[1-[2]]", "'[' inside brackets"},
      {"node[]", "an empty number"},
      {"node[1,,2]", "an empty number"},
      {"node[3-1]", "range '3-1' ends below its start"},
      {"node[a-b]", "'a-b' is not a number"},
      {"node[-1]", "'-1' is not a number"},
      {"node[1-]", "'1-' is not a number"},
      {"node[ 1]", "' 1' is not a number"},
      {"node[+1]", "'+1' is not a number"},
      {"node[1-3]-ib", "text '-ib' after the last ']'"},
      {"node\\[1\\]", "no escapes"},
      {"\"node1\"", "no escapes or quotes"},
      {"node[0-99999]", "more than 65536 hosts"},
  };
  for (const auto& [text, why] : cases) {
    auto h = expandSlurmHostlist("x," + text);
    ASSERT_FALSE(h.isOk()) << text;
    const std::string& m = h.status().message();
    EXPECT_NE(m.find("invalid SLURM host list 'x," + text + "'"), std::string::npos) << m;
    EXPECT_NE(m.find(why), std::string::npos) << m;
  }
}

TEST(SlurmHostlistTest, TasksPerNode) {
  EXPECT_EQ(parseSlurmTasksPerNode("4").value(), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(parseSlurmTasksPerNode("2(x3),1").value(), (std::vector<std::int64_t>{2, 2, 2, 1}));
  for (const char* bad : {"", "0", "x", "2(x0)", "2(3)", "2(x3", "2,,1", "-1"}) {
    auto r = parseSlurmTasksPerNode(bad);
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_NE(r.status().message().find("'" + std::string(bad) + "'"), std::string::npos)
        << r.status().message();
  }
}

// NOTE [Launch environment]: launch.env cannot set what the launcher sets for each rank or
// what rank discovery reads; the protocol's list must hold every one of them.
TEST(WorldEnvTest, LaunchEnvRefusesEveryVariableTheLauncherSetsOrDiscoveryReads) {
  const auto names = worldVariableNames();
  EXPECT_GE(names.size(), 23u);
  for (const auto name : names) EXPECT_TRUE(protocol::isLauncherVariable(name)) << name;
  NodeAgentOptions options;
  options.nnodes = 2;
  options.nprocPerNode = 2;
  for (const auto& [name, value] : rankEnvironment({}, options, 1)) {
    EXPECT_TRUE(protocol::isLauncherVariable(name)) << name;
  }
  EXPECT_FALSE(protocol::isLauncherVariable("OPENBLAS_CORETYPE"));
}

}  // namespace
}  // namespace fs::launch
