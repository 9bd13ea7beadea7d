// The real `flamingo-train launch` with real rank processes: small /bin/sh scripts that
// record their environment, fail, kill themselves, ignore or trap signals. No timing
// thresholds: every wait is for a condition (a file, an exit), bounded generously; the
// scripts end themselves if a test dies, and TearDown kills whatever is left.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "backend/protocol/wire/agent_events.h"

namespace fs::launch {
namespace {

namespace stdfs = std::filesystem;
using namespace protocol;

constexpr auto kPatience = std::chrono::seconds(60);  // an upper bound, never a threshold

// Shared by every script: the directory is $1; wait_for FILE waits (bounded) for FILE.
const std::string kPrelude = R"(dir="$1"
n=0
wait_for() { while [ ! -e "$dir/$1" ]; do n=$((n+1)); [ $n -gt 6000 ] && exit 99; sleep 0.01; done; }
)";

std::string slurp(const stdfs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool waitUntil(const std::function<bool()>& condition) {
  auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::string binary() {
  const char* dir = std::getenv("FS_BIN_DIR");
  return std::string(dir ? dir : FS_BINARY_DIR "/bin") + "/flamingo-train";
}

template <class T>
std::vector<T> eventsOf(const std::vector<AgentEvent>& events) {
  std::vector<T> out;
  for (const auto& e : events) {
    if (const T* body = std::get_if<T>(&e.body)) out.push_back(*body);
  }
  return out;
}

class NodeAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stdfs::temp_directory_path() / ("fs_agent_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_);
  }

  void TearDown() override {
    if (agent_ > 0 || HasFailure()) {  // a failed test: take everything down
      if (agent_ > 0) ::kill(agent_, SIGKILL);
      for (const auto& s : eventsOf<RankSpawnedEvent>(events())) ::kill(-static_cast<pid_t>(s.pid), SIGKILL);
      if (agent_ > 0) ::waitpid(agent_, nullptr, 0);
    }
    stdfs::remove_all(dir_);
  }

  std::string script(const std::string& name, const std::string& body) {
    stdfs::path p = dir_ / name;
    std::ofstream(p) << kPrelude << body;
    return p.string();
  }

  // Starts flamingo-train with `args`; stdout and stderr go to files. `env` is added to
  // the environment; `own_group` puts it in a new process group (a terminal's job).
  void start(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
             bool own_group = false) {
    std::vector<std::string> argv = {binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (own_group) ::setpgid(0, 0);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      if (!::freopen(out.c_str(), "w", stdout) || !::freopen(err.c_str(), "w", stderr)) ::_exit(126);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    agent_ = pid;
  }

  // The agent's exit code (or 128 + signal); fails the test if it never ends.
  int finish() {
    int status = 0;
    bool done = waitUntil([&] { return ::waitpid(agent_, &status, WNOHANG) == agent_; });
    EXPECT_TRUE(done) << "flamingo-train launch did not exit; stderr:\n" << stderrText();
    if (!done) return -1;
    agent_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // Runs to the end.
  int run(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
    start(args, env);
    return finish();
  }

  std::vector<std::string> launch(std::vector<std::string> extra, const std::string& script_path) {
    std::vector<std::string> args = {"launch",          "--nproc-per-node", "3",   "--run-dir",
                                     runDir().string(), "--node-name",      "test"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "/bin/sh", script_path, dir_.string()});
    return args;
  }

  stdfs::path runDir() const { return dir_ / "run"; }
  stdfs::path file(const std::string& name) const { return dir_ / name; }
  std::string stderrText() const { return slurp(dir_ / "stderr"); }
  bool allExist(const std::string& prefix, int n = 3) const {
    for (int r = 0; r < n; ++r) {
      if (!stdfs::exists(dir_ / (prefix + std::to_string(r)))) return false;
    }
    return true;
  }

  std::vector<AgentEvent> events() const {
    AgentEventFile f = decodeAgentEvents(slurp(runDir() / "agent-test.jsonl"), "agent-test.jsonl");
    for (const auto& e : f.errors) ADD_FAILURE() << e.message();
    return f.events;
  }

  // Gap-free seqs, agent_started first, agent_finished last with `exit_code`.
  std::vector<AgentEvent> checkedEvents(int exit_code) const {
    auto ev = events();
    EXPECT_GE(ev.size(), 2u);
    if (ev.size() < 2) return ev;
    for (std::size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i].seq, i);
    EXPECT_TRUE(std::holds_alternative<AgentStartedEvent>(ev.front().body));
    const auto* fin = std::get_if<AgentFinishedEvent>(&ev.back().body);
    EXPECT_TRUE(fin != nullptr);
    if (fin) {
      EXPECT_EQ(fin->exit_code, exit_code);
    }
    return ev;
  }

  std::int64_t pidOf(const std::vector<AgentEvent>& ev, int rank) const {
    for (const auto& s : eventsOf<RankSpawnedEvent>(ev)) {
      if (s.rank == rank) return s.pid;
    }
    ADD_FAILURE() << "no spawned event for rank " << rank;
    return -1;
  }

  stdfs::path dir_;
  pid_t agent_ = -1;
};

// The script of rank 1 in the failure tests: once its peers are ready, fail with `how`.
std::string failingRankOne(const std::string& how, const std::string& peers) {
  return "if [ \"$RANK\" = 1 ]; then wait_for ready-0; wait_for ready-2; " + how + "; fi\n" + peers +
         "touch \"$dir/ready-$RANK\"\nwait_for never\n";
}

TEST_F(NodeAgentTest, RanksGetTheirEnvironment) {
  std::string s = script("env.sh", R"(printf '%s\n' "$RANK" "$LOCAL_RANK" "$WORLD_SIZE" "$LOCAL_WORLD_SIZE" \
  "$MASTER_ADDR" "$MASTER_PORT" "$GROUP_RANK" "$NODE_RANK" "$KEPT" > "$dir/env.tmp-$RANK"
mv "$dir/env.tmp-$RANK" "$dir/env-$RANK"
)");
  start({"launch", "--nnodes=2", "--node_rank", "1", "--nproc_per_node=3", "--master_addr", "10.1.2.3",
         "--master-port", "4567", "--run-dir", runDir().string(), "--node-name", "test", "--", "/bin/sh", s,
         dir_.string()},
        {{"KEPT", "inherited"}});
  pid_t agent = agent_;
  ASSERT_EQ(finish(), 0) << stderrText();
  for (int local = 0; local < 3; ++local) {
    std::string rank = std::to_string(3 + local);
    EXPECT_EQ(slurp(file("env-" + rank)),
              rank + "\n" + std::to_string(local) + "\n6\n3\n10.1.2.3\n4567\n1\n1\ninherited\n");
  }
  auto ev = checkedEvents(0);
  auto started = eventsOf<AgentStartedEvent>(ev);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].node, "test");
  EXPECT_EQ(started[0].node_rank, 1);
  EXPECT_EQ(started[0].nnodes, 2);
  EXPECT_EQ(started[0].nproc_per_node, 3);
  EXPECT_EQ(started[0].master_addr, "10.1.2.3");
  EXPECT_EQ(started[0].master_port, 4567);
  EXPECT_EQ(started[0].command, (std::vector<std::string>{"/bin/sh", s, dir_.string()}));
  EXPECT_EQ(started[0].pid, agent);
  auto spawned = eventsOf<RankSpawnedEvent>(ev);
  auto exited = eventsOf<RankExitedEvent>(ev);
  ASSERT_EQ(spawned.size(), 3u);
  ASSERT_EQ(exited.size(), 3u);
  for (int local = 0; local < 3; ++local) {
    EXPECT_EQ(spawned[local].rank, 3 + local);
    EXPECT_EQ(spawned[local].local_rank, local);
  }
  for (const auto& e : exited) {
    EXPECT_EQ(e.exit_code, 0);
    EXPECT_FALSE(e.signal.has_value());
    EXPECT_EQ(e.pid, pidOf(ev, e.rank));
    EXPECT_GE(e.wall_s, 0);
  }
  EXPECT_EQ(std::get<AgentFinishedEvent>(ev.back().body).reason, "every rank exited with code 0");
}

TEST_F(NodeAgentTest, RankExitCodeStopsTheOthers) {
  std::string s = script("fail.sh", failingRankOne("exit 3", "trap 'exit 0' TERM\n"));
  ASSERT_EQ(run(launch({}, s)), 1) << stderrText();
  auto ev = checkedEvents(1);
  std::string reason = "rank 1 (pid " + std::to_string(pidOf(ev, 1)) + ") exited with code 3";
  EXPECT_NE(stderrText().find("flamingo-train launch: " + reason + "\n"), std::string::npos) << stderrText();
  auto stopping = eventsOf<AgentStoppingEvent>(ev);
  ASSERT_EQ(stopping.size(), 1u);
  EXPECT_EQ(stopping[0].reason, reason);
  EXPECT_EQ(stopping[0].rank, 1);
  auto forwarded = eventsOf<SignalForwardedEvent>(ev);
  ASSERT_EQ(forwarded.size(), 1u);
  EXPECT_EQ(forwarded[0].signal, "SIGTERM");
  EXPECT_EQ(forwarded[0].ranks, 2);
  std::map<int, RankExitedEvent> exits;
  for (const auto& e : eventsOf<RankExitedEvent>(ev)) exits[e.rank] = e;
  ASSERT_EQ(exits.size(), 3u);
  EXPECT_EQ(exits[1].exit_code, 3);
  EXPECT_EQ(exits[0].exit_code, 0) << "trapped SIGTERM and stopped";
  EXPECT_EQ(exits[2].exit_code, 0);
  EXPECT_EQ(std::get<AgentFinishedEvent>(ev.back().body).reason, reason);
}

TEST_F(NodeAgentTest, RankKilledBySignalIsNamed) {
  // The rank notes the time (ms since the epoch) just before it kills itself.
  std::string s = script(
      "kill.sh", failingRankOne("date +%s%3N > \"$dir/killed-at\"; kill -9 $$", "trap 'exit 0' TERM\n"));
  ASSERT_EQ(run(launch({}, s)), 1) << stderrText();
  auto ev = checkedEvents(1);
  std::string reason = "rank 1 (pid " + std::to_string(pidOf(ev, 1)) + ") was killed by SIGKILL";
  EXPECT_NE(stderrText().find(reason), std::string::npos) << stderrText();
  for (const auto& e : eventsOf<RankExitedEvent>(ev)) {
    if (e.rank != 1) continue;
    EXPECT_EQ(e.signal, SIGKILL);
    EXPECT_EQ(e.signal_name, "SIGKILL");
    EXPECT_FALSE(e.exit_code.has_value());
  }
  EXPECT_EQ(std::get<AgentFinishedEvent>(ev.back().body).reason, reason);
  // Detection time: from the kill to the agent's `stopping` event naming the rank (printed, not asserted).
  const std::int64_t killedAt = std::stoll(slurp(file("killed-at")));
  for (const auto& e : ev) {
    if (!std::holds_alternative<AgentStoppingEvent>(e.body)) continue;
    std::printf("detection: killed rank (node agent): %.3f s (SIGCHLD; no timeout involved)\n",
                static_cast<double>(e.t - killedAt) / 1000.0);
  }
}

TEST_F(NodeAgentTest, RanksIgnoringSigtermAreKilledAfterTheGracePeriod) {
  std::string s = script("stubborn.sh", failingRankOne("exit 1", "trap '' TERM\n"));
  ASSERT_EQ(run(launch({"--stop-grace-s", "0.2"}, s)), 1) << stderrText();
  auto ev = checkedEvents(1);
  auto forwarded = eventsOf<SignalForwardedEvent>(ev);
  ASSERT_EQ(forwarded.size(), 2u);
  EXPECT_EQ(forwarded[0].signal, "SIGTERM");
  EXPECT_EQ(forwarded[1].signal, "SIGKILL");
  EXPECT_EQ(forwarded[1].ranks, 2);
  for (const auto& e : eventsOf<RankExitedEvent>(ev)) {
    if (e.rank == 1) {
      EXPECT_EQ(e.exit_code, 1);
    } else {
      EXPECT_EQ(e.signal_name, "SIGKILL") << "rank " << e.rank;
    }
  }
  std::string reason = "rank 1 (pid " + std::to_string(pidOf(ev, 1)) + ") exited with code 1";
  EXPECT_EQ(std::get<AgentFinishedEvent>(ev.back().body).reason, reason) << "the first failure is the reason";
}

// Ranks count the stop signals they get and exit once released.
std::string countingRanks(const std::string& signal) {
  return "trap 'echo got >> \"$dir/" + signal + "-$RANK\"' " + signal + "\ntouch \"$dir/ready-$RANK\"\n" +
         "wait_for release\nexit 0\n";
}

TEST_F(NodeAgentTest, SigtermToTheAgentIsForwardedOnceAndRanksStopCleanly) {
  std::string s = script("term.sh", countingRanks("TERM"));
  start(launch({}, s));
  ASSERT_TRUE(waitUntil([&] { return allExist("ready-"); })) << stderrText();
  ::kill(agent_, SIGTERM);
  ASSERT_TRUE(waitUntil([&] { return allExist("TERM-"); })) << stderrText();
  ::kill(agent_, SIGTERM);  // a repeat: not forwarded again
  ASSERT_TRUE(
      waitUntil([&] { return stderrText().find("received SIGTERM while stopping") != std::string::npos; }));
  std::ofstream(file("release")).close();
  ASSERT_EQ(finish(), 0) << stderrText();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(slurp(file("TERM-" + std::to_string(r))), "got\n") << "rank " << r;
  auto ev = checkedEvents(0);
  auto forwarded = eventsOf<SignalForwardedEvent>(ev);
  ASSERT_EQ(forwarded.size(), 1u);
  EXPECT_EQ(forwarded[0].signal, "SIGTERM");
  EXPECT_EQ(forwarded[0].ranks, 3);
  EXPECT_EQ(forwarded[0].reason, "received SIGTERM");
  for (const auto& e : eventsOf<RankExitedEvent>(ev)) EXPECT_EQ(e.exit_code, 0);
  EXPECT_EQ(std::get<AgentFinishedEvent>(ev.back().body).reason,
            "received SIGTERM; every rank exited with code 0");
}

TEST_F(NodeAgentTest, CtrlCToTheAgentsProcessGroupReachesEachRankOnce) {
  std::string s = script("int.sh", countingRanks("INT"));
  start(launch({}, s), {}, /*own_group=*/true);
  ASSERT_TRUE(waitUntil([&] { return allExist("ready-"); })) << stderrText();
  ::kill(-agent_, SIGINT);  // what a terminal does: the whole foreground group
  ASSERT_TRUE(waitUntil([&] { return allExist("INT-"); })) << stderrText();
  std::ofstream(file("release")).close();
  ASSERT_EQ(finish(), 0) << stderrText();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(slurp(file("INT-" + std::to_string(r))), "got\n") << "rank " << r;
  auto forwarded = eventsOf<SignalForwardedEvent>(checkedEvents(0));
  ASSERT_EQ(forwarded.size(), 1u);
  EXPECT_EQ(forwarded[0].signal, "SIGINT");
}

TEST_F(NodeAgentTest, SecondSigintKillsEveryRank) {
  std::string s = script("int.sh",
                         "trap 'echo got >> \"$dir/INT-$RANK\"' INT\ntouch \"$dir/ready-$RANK\"\n"
                         "wait_for never\n");
  start(launch({}, s));
  ASSERT_TRUE(waitUntil([&] { return allExist("ready-"); })) << stderrText();
  ::kill(agent_, SIGINT);
  ASSERT_TRUE(waitUntil([&] { return allExist("INT-"); })) << stderrText();
  ::kill(agent_, SIGINT);
  ASSERT_EQ(finish(), 1) << stderrText();
  auto ev = checkedEvents(1);
  auto forwarded = eventsOf<SignalForwardedEvent>(ev);
  ASSERT_EQ(forwarded.size(), 2u);
  EXPECT_EQ(forwarded[0].signal, "SIGINT");
  EXPECT_EQ(forwarded[1].signal, "SIGKILL");
  EXPECT_EQ(forwarded[1].reason, "second SIGINT");
  for (const auto& e : eventsOf<RankExitedEvent>(ev)) EXPECT_EQ(e.signal_name, "SIGKILL");
  EXPECT_EQ(std::get<AgentFinishedEvent>(ev.back().body).reason, "second SIGINT");
  EXPECT_NE(stderrText().find("flamingo-train launch: second SIGINT\n"), std::string::npos) << stderrText();
}

TEST_F(NodeAgentTest, RanksDieWithAKilledAgent) {
  // Orphaned ranks become this process's children, so it can reap them and see them go.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  std::string s = script("orphan.sh",
                         "echo $$ > \"$dir/pid.tmp-$RANK\"\nmv \"$dir/pid.tmp-$RANK\" \"$dir/pid-$RANK\"\n"
                         "wait_for never\n");
  start(launch({}, s));
  ASSERT_TRUE(waitUntil([&] { return allExist("pid-"); })) << stderrText();
  std::vector<pid_t> ranks;
  for (int r = 0; r < 3; ++r) ranks.push_back(std::stoi(slurp(file("pid-" + std::to_string(r)))));
  // A rank can write its pid before the agent has recorded its spawn: kill the
  // agent only once all three rank_spawned events are written.
  ASSERT_TRUE(waitUntil([&] { return eventsOf<RankSpawnedEvent>(events()).size() == 3; })) << stderrText();
  ::kill(agent_, SIGKILL);
  EXPECT_EQ(finish(), 128 + SIGKILL);
  bool gone = waitUntil([&] {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    for (pid_t p : ranks) {
      if (::kill(p, 0) == 0) return false;
    }
    return true;
  });
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  EXPECT_TRUE(gone) << "ranks outlived their agent";
  auto ev = events();
  EXPECT_EQ(eventsOf<RankSpawnedEvent>(ev).size(), 3u);
  EXPECT_TRUE(eventsOf<AgentFinishedEvent>(ev).empty()) << "a killed agent writes nothing more";
}

#ifdef FS_TEST_ENGINE
// Issue 26 item 5: the agent passes --allow-pipe on with the rank command, so ranks of a config
// with pipe: commands do not refuse what the command line allowed (and do refuse without it).
TEST_F(NodeAgentTest, AllowPipeTravelsWithTheRankCommand) {
  const std::string preset = std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml";
  // Dataset 0 names no shards: a validation error (exit 1) once past the pipe gate (exit 2).
  auto rankExits = [&](bool allow) {
    std::vector<std::string> args = {"launch",
                                     "--nproc-per-node",
                                     "2",
                                     "--run-dir",
                                     runDir().string(),
                                     "--node-name",
                                     "test",
                                     "--",
                                     "flamingo-train",
                                     "train",
                                     "--config",
                                     preset,
                                     "--set",
                                     "data.source=shards",
                                     "--set",
                                     "data.datasets[1].shards=pipe:cat /nonexistent/{0..3}.tar"};
    if (allow) args.push_back("--allow-pipe");
    EXPECT_EQ(run(args), 1) << stderrText();
    std::vector<int> codes;
    for (const auto& e : eventsOf<RankExitedEvent>(checkedEvents(1))) {
      if (e.exit_code) codes.push_back(*e.exit_code);  // else stopped by the agent's SIGTERM
    }
    stdfs::remove_all(runDir());
    return codes;
  };
  const auto refused = rankExits(false);
  ASSERT_FALSE(refused.empty());
  for (int c : refused) EXPECT_EQ(c, 2);
  const auto allowed = rankExits(true);
  ASSERT_FALSE(allowed.empty());
  for (int c : allowed) EXPECT_EQ(c, 1);
}
#endif

TEST_F(NodeAgentTest, SubcommandsRunThisExecutableWithTheRunDirectory) {
  // `train` without --config fails at once (with or without the engine built): each rank
  // exits 2, which is enough to see what it was started as.
  ASSERT_EQ(run({"launch", "--nproc-per-node", "2", "--run-dir", runDir().string(), "--node-name", "test",
                 "--", "flamingo-train", "train"}),
            1)
      << stderrText();
  auto ev = checkedEvents(1);
  auto started = eventsOf<AgentStartedEvent>(ev);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].command, (std::vector<std::string>{stdfs::canonical(binary()).string(), "train",
                                                          "--run-dir", stdfs::absolute(runDir()).string()}));
  for (const auto& e : eventsOf<RankExitedEvent>(ev)) {
    if (e.exit_code) {  // else stopped by the agent's SIGTERM
      EXPECT_EQ(*e.exit_code, 2);
    }
  }
}

TEST_F(NodeAgentTest, AnExistingEventFileIsContinued) {
  std::string s = script("ok.sh", "exit 0\n");
  ASSERT_EQ(run(launch({}, s)), 0) << stderrText();
  std::size_t first = events().size();
  std::ofstream(runDir() / "agent-test.jsonl", std::ios::app) << R"({"v":"1.0","seq":99,"t")";  // torn line
  ASSERT_EQ(run(launch({}, s)), 0) << stderrText();
  auto ev = events();
  ASSERT_EQ(ev.size(), 2 * first);
  for (std::size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i].seq, i);
}

TEST_F(NodeAgentTest, PrintEnvShowsWhatARankSees) {
  std::string s = script("world.sh", "\"$2\" launch --print-env > \"$dir/world-$RANK\"\n");
  ASSERT_EQ(run({"launch", "--nproc-per-node", "2", "--master-port", "3456", "--run-dir", runDir().string(),
                 "--", "/bin/sh", s, dir_.string(), binary()}),
            0)
      << stderrText();
  for (int r = 0; r < 2; ++r) {
    auto j = nlohmann::json::parse(slurp(file("world-" + std::to_string(r))));
    EXPECT_EQ(j["rank"], r);
    EXPECT_EQ(j["local_rank"], r);
    EXPECT_EQ(j["world_size"], 2);
    EXPECT_EQ(j["local_world_size"], 2);
    EXPECT_EQ(j["master_addr"], "127.0.0.1");
    EXPECT_EQ(j["master_port"], 3456);
    EXPECT_EQ(j["source"], "torchrun");
  }
  EXPECT_EQ(run({"launch", "--print-env", "--rank", "1"},
                {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}),
            1);
  EXPECT_NE(stderrText().find("--rank 1 but RANK=0"), std::string::npos) << stderrText();
  EXPECT_EQ(run({"launch", "--print-env"},
                {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "gpu[07-08]"}}),
            0)
      << stderrText();
  EXPECT_EQ(nlohmann::json::parse(slurp(file("stdout")))["master_addr"], "gpu07");
}

// Restart tests (NOTE [Restarts]): each rank records its attempt's variables; in the first
// `fails` attempts rank 1 kills itself once its peers are up, the others stop on SIGTERM;
// later attempts exit 0.
std::string restartingRanks(int fails) {
  return R"(a="$TORCHELASTIC_RESTART_COUNT"
printf '%s\n' "$a" "$TORCHELASTIC_MAX_RESTARTS" "$FLAMINGO_RESTART_REASON" "${FLAMINGO_RESTART_FAILED_MS:-none}" > "$dir/env.tmp-$a-$RANK"
mv "$dir/env.tmp-$a-$RANK" "$dir/env-$a-$RANK"
if [ "$a" -lt )" +
         std::to_string(fails) + R"( ]; then
  trap 'exit 0' TERM
  if [ "$RANK" = 1 ]; then wait_for ready-$a-0; wait_for ready-$a-2; kill -9 $$; fi
  touch "$dir/ready-$a-$RANK"
  wait_for never
fi
)";
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST_F(NodeAgentTest, RestartsEveryRankAfterAFailure) {
  std::string s = script("restart.sh", restartingRanks(1));
  ASSERT_EQ(run(launch({"--max-restarts", "2"}, s)), 0) << stderrText();
  auto ev = checkedEvents(0);
  auto spawned = eventsOf<RankSpawnedEvent>(ev);
  ASSERT_EQ(spawned.size(), 6u) << "every rank, twice";
  const std::string reason = "rank 1 (pid " + std::to_string(spawned[1].pid) + ") was killed by SIGKILL";
  auto restarting = eventsOf<AgentRestartingEvent>(ev);
  ASSERT_EQ(restarting.size(), 1u);
  EXPECT_EQ(restarting[0], (AgentRestartingEvent{1, 2, reason, 1}));
  // In file order: the first attempt's exits, then `restarting`, then the second attempt's spawns.
  std::size_t at = 0, exitsBefore = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (std::holds_alternative<AgentRestartingEvent>(ev[i].body)) at = i;
  }
  for (std::size_t i = 0; i < at; ++i) exitsBefore += std::holds_alternative<RankExitedEvent>(ev[i].body);
  EXPECT_EQ(exitsBefore, 3u);
  EXPECT_TRUE(std::holds_alternative<RankSpawnedEvent>(ev[at + 1].body));
  for (int rank = 0; rank < 3; ++rank) {
    auto first = lines(slurp(file("env-0-" + std::to_string(rank))));
    ASSERT_EQ(first.size(), 4u);
    EXPECT_EQ(first[0], "0");
    EXPECT_EQ(first[1], "2");
    EXPECT_EQ(first[2], "start");
    EXPECT_EQ(first[3], "none");
    auto second = lines(slurp(file("env-1-" + std::to_string(rank))));
    ASSERT_EQ(second.size(), 4u);
    EXPECT_EQ(second[0], "1");
    EXPECT_EQ(second[2], reason);
    EXPECT_GT(std::stoll(second[3]), 0) << "the failure's time";
  }
  EXPECT_NE(stderrText().find("restarting every rank (restart 1 of 2) after: " + reason), std::string::npos)
      << stderrText();
}

TEST_F(NodeAgentTest, FailingAgainAfterTheLastRestartNamesTheLimit) {
  std::string s = script("restart.sh", restartingRanks(2));
  ASSERT_EQ(run(launch({"--max_restarts=1"}, s)), 1) << stderrText();
  auto ev = checkedEvents(1);
  auto spawned = eventsOf<RankSpawnedEvent>(ev);
  ASSERT_EQ(spawned.size(), 6u);
  EXPECT_EQ(eventsOf<AgentRestartingEvent>(ev).size(), 1u);
  const std::string reason =
      "rank 1 failed again after 1 restart (--max-restarts / launch.max_restarts: 1): rank 1 (pid " +
      std::to_string(spawned[4].pid) + ") was killed by SIGKILL";
  EXPECT_EQ(std::get<AgentFinishedEvent>(ev.back().body).reason, reason);
  EXPECT_NE(stderrText().find("flamingo-train launch: " + reason + "\n"), std::string::npos) << stderrText();
}

TEST_F(NodeAgentTest, WithoutRestartsLeftOrAllowedTheFirstFailureEndsTheRun) {
  std::string s = script("restart.sh", restartingRanks(1));
  ASSERT_EQ(run(launch({"--max-restarts", "0"}, s)), 1) << stderrText();
  auto ev = checkedEvents(1);
  EXPECT_TRUE(eventsOf<AgentRestartingEvent>(ev).empty());
  EXPECT_EQ(eventsOf<RankSpawnedEvent>(ev).size(), 3u);
  EXPECT_EQ(std::get<AgentFinishedEvent>(ev.back().body).reason,
            "rank 1 (pid " + std::to_string(pidOf(ev, 1)) + ") was killed by SIGKILL")
      << "today's message when no restart was allowed";
}

TEST_F(NodeAgentTest, AStopIsNeverRestarted) {
  // Every rank waits; SIGTERM to the agent is forwarded, the ranks exit 3: a failure, but asked for.
  std::string s = script("stop.sh", R"(trap 'exit 3' TERM
touch "$dir/ready-$TORCHELASTIC_RESTART_COUNT-$RANK"
wait_for never
)");
  start(launch({"--max-restarts", "3"}, s));
  ASSERT_TRUE(waitUntil([&] { return allExist("ready-0-"); }));
  ::kill(agent_, SIGTERM);
  ASSERT_EQ(finish(), 1) << stderrText();
  auto ev = checkedEvents(1);
  EXPECT_TRUE(eventsOf<AgentRestartingEvent>(ev).empty());
  EXPECT_EQ(eventsOf<RankSpawnedEvent>(ev).size(), 3u);
}

TEST_F(NodeAgentTest, BadOptionsAreUsageErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"launch", "--", "/bin/true"}, "--run-dir is required"},
      {{"launch", "--run-dir", "r"}, "no rank command"},
      {{"launch", "--run-dir", "r", "--nnodes", "2", "--node-rank", "2", "--", "/bin/true"}, "--node-rank 2"},
      {{"launch", "--run-dir", "r", "--nproc-per-node", "0", "--", "/bin/true"}, "--nproc-per-node 0"},
      {{"launch", "--run-dir", "r", "--nproc-per-node", "two", "--", "/bin/true"},
       "'two' is not a whole number"},
      {{"launch", "--run-dir", "r", "--stop-grace-s", "-1", "--", "/bin/true"}, "--stop-grace-s"},
      {{"launch", "--run-dir", "r", "--max-restarts", "-1", "--", "/bin/true"},
       "--max-restarts -1 is out of range; expected 0..1000"},
      {{"launch", "--run-dir", "r", "--max-restarts", "1.5", "--", "/bin/true"},
       "--max-restarts '1.5' is not a whole number"},
      {{"launch", "--run-dir", "r", "--nprocs", "2", "--", "/bin/true"}, "unknown option '--nprocs'"},
      {{"launch", "--run-dir", "r", "/bin/true"}, "goes after '--'"},
      {{"launch", "--run-dir", "r", "--rank", "1", "--", "/bin/true"}, "--rank is only for --print-env"},
      {{"launch", "--print-env", "--", "/bin/true"}, "--print-env takes no command"},
  };
  for (const auto& [args, message] : cases) {
    EXPECT_EQ(run(args), 2) << args.back();
    EXPECT_NE(stderrText().find(message), std::string::npos) << stderrText();
  }
  EXPECT_EQ(run({"launch", "--run-dir", runDir().string(), "--", "no-such-program-here"}), 1);
  EXPECT_NE(stderrText().find("program 'no-such-program-here' not found in PATH"), std::string::npos)
      << stderrText();
  EXPECT_EQ(run({"launch", "--help"}), 0);
  EXPECT_NE(slurp(file("stdout")).find("usage: flamingo-train launch"), std::string::npos);
}

}  // namespace
}  // namespace fs::launch
