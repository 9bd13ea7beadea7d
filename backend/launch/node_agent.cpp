#include "backend/launch/node_agent.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <ostream>
#include <sstream>

#include "backend/launch/agent_event_log.h"
#include "backend/launch/agent_signals.h"
#include "backend/launch/world_env.h"
#include "backend/protocol/wire/events.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::launch {

using protocol::Status;
using protocol::StatusOr;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxPollMs = 1000;  // a wake-up now and then costs nothing and bounds any missed one

std::string seconds(double s) {
  std::ostringstream os;
  os << s << " s";
  return os.str();
}

struct RankState {
  int rank = 0;
  int localRank = 0;
  pid_t pid = -1;
  Clock::time_point start;
  bool live = true;
};

// One run of the agent: NOTE [Node agent behaviour] in node_agent.h.
class Agent {
 public:
  Agent(const NodeAgentOptions& o, std::string node, RankCommand command, AgentEventLog events,
        std::map<std::string, std::string> env, AgentSignals& signals, std::ostream& log)
      : o_(o),
        node_(std::move(node)),
        command_(std::move(command)),
        events_(std::move(events)),
        env_(std::move(env)),
        signals_(signals),
        log_(log),
        grace_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.stopGraceS))) {}

  NodeAgentResult run() {
    protocol::AgentStartedEvent started{node_,
                                        static_cast<int>(o_.nodeRank),
                                        static_cast<int>(o_.nnodes),
                                        static_cast<int>(o_.nprocPerNode),
                                        o_.masterAddr,
                                        static_cast<int>(o_.masterPort),
                                        localHostName(),
                                        ::getpid(),
                                        command_.argv};
    started.command[0] = command_.program;
    record(started);
    int first = static_cast<int>(o_.nodeRank * o_.nprocPerNode);
    say("node " + std::to_string(o_.nodeRank) + " of " + std::to_string(o_.nnodes) + ": ranks " +
        std::to_string(first) + ".." + std::to_string(first + o_.nprocPerNode - 1) + " of " +
        std::to_string(o_.nnodes * o_.nprocPerNode) + ", master " + o_.masterAddr + ":" +
        std::to_string(o_.masterPort) + "; events in " + events_.path().string());
    spawnAll();
    while (true) {
      reap();  // first: exits seen while starting ranks drained their SIGCHLD bytes
      checkDeadlines();
      if (liveCount() == 0 || gave_up_) {
        if (!mayRestart()) break;
        restart();
        continue;
      }
      pollfd pfd{signals_.fd(), POLLIN, 0};
      if (::poll(&pfd, 1, pollTimeoutMs()) < 0 && errno != EINTR) {
        say(std::string("poll failed: ") + std::strerror(errno));
        ::usleep(100 * 1000);
      }
      for (int sig : signals_.drain()) onSignal(sig);
    }
    return finish();
  }

 private:
  void say(const std::string& line) { log_ << "flamingo-train launch: " << line << std::endl; }

  void record(protocol::AgentEventBody body) {
    Status s = events_.append(std::move(body));
    if (!s && !event_error_reported_) {
      say("warning: " + s.message() + "; going on without agent events");
      event_error_reported_ = true;
    }
  }

  std::size_t liveCount() const {
    return std::count_if(ranks_.begin(), ranks_.end(), [](const RankState& r) { return r.live; });
  }

  int signalLive(int sig) {
    int n = 0;
    for (const auto& r : ranks_) n += r.live && signalRank(r.pid, sig) ? 1 : 0;
    return n;
  }

  std::string liveList() const {
    std::string s;
    for (const auto& r : ranks_) {
      if (r.live)
        s += (s.empty() ? "" : ", ") + std::to_string(r.rank) + " (pid " + std::to_string(r.pid) + ")";
    }
    return s;
  }

  // NOTE [Restarts] in node_agent.h: a failure of a rank, not a stop, with restarts left.
  bool mayRestart() const {
    return failed_ && !gave_up_ && !signalled_ && !start_failed_ && restarts_ < o_.maxRestarts;
  }

  void restart() {
    ++restarts_;
    last_reason_ = reason_;
    record(
        protocol::AgentRestartingEvent{restarts_, static_cast<int>(o_.maxRestarts), reason_, failed_rank_});
    say("restarting every rank (restart " + std::to_string(restarts_) + " of " +
        std::to_string(o_.maxRestarts) + ") after: " + reason_);
    ranks_.clear();
    stopping_ = failed_ = false;
    reason_.clear();
    failed_rank_.reset();
    kill_at_.reset();
    give_up_at_.reset();
    spawnAll();
  }

  // The attempt's variables on top of the agent's environment (NOTE [Restarts]).
  std::map<std::string, std::string> attemptEnvironment() const {
    auto env = env_;
    env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(restarts_);
    env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(o_.maxRestarts);
    env["FLAMINGO_RESTART_REASON"] = restarts_ == 0 ? "start" : last_reason_;
    if (restarts_ == 0) {
      env.erase("FLAMINGO_RESTART_FAILED_MS");
    } else {
      env["FLAMINGO_RESTART_FAILED_MS"] = std::to_string(failed_ms_);
    }
    return env;
  }

  void spawnAll() {
    const auto env = attemptEnvironment();
    for (int local = 0; local < o_.nprocPerNode && !stopping_; ++local) {
      int rank = static_cast<int>(o_.nodeRank * o_.nprocPerNode) + local;
      auto pid = spawnRank(command_, rankEnvironment(env, o_, local));
      if (!pid) {
        start_failed_ = true;
        fail("cannot start rank " + std::to_string(rank) + ": " + pid.status().message(), std::nullopt);
        return;
      }
      ranks_.push_back({rank, local, pid.value(), Clock::now(), true});
      record(protocol::RankSpawnedEvent{rank, local, pid.value()});
      for (int sig : signals_.drain()) onSignal(sig);  // a stop during start-up stops starting
    }
  }

  void onSignal(int sig) {
    if (sig == SIGCHLD) return;
    if (sig == SIGINT && ++sigints_ >= 2) {
      killAll("second SIGINT");
      return;
    }
    if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP) return;
    signalled_ = true;  // a stop asked for: never restarted
    std::string received = "received " + signalName(sig);
    if (stopping_) {
      say(received + " while stopping" + (sig == SIGINT ? "; a second SIGINT kills every rank" : ""));
      return;
    }
    int forward = sig == SIGHUP ? SIGTERM : sig;
    stop_cause_ = received;
    stopping_ = true;
    record(protocol::AgentStoppingEvent{received, std::nullopt});
    int n = signalLive(forward);
    record(protocol::SignalForwardedEvent{signalName(forward), n, received});
    kill_at_ = Clock::now() + grace_;
    say(received + ": forwarded " + signalName(forward) + " to " + std::to_string(n) +
        " rank(s); SIGKILL after " + seconds(o_.stopGraceS));
  }

  // A rank failed (or could not start) while the others run: stop them.
  void fail(const std::string& reason, std::optional<int> rank) {
    if (!failed_) {
      failed_ = true;
      reason_ = reason;
      failed_rank_ = rank;
      failed_ms_ = protocol::unixMillisNow();
    }
    if (stopping_) return;
    stopping_ = true;
    record(protocol::AgentStoppingEvent{reason, rank});
    int n = signalLive(SIGTERM);
    if (n > 0) {
      record(protocol::SignalForwardedEvent{"SIGTERM", n, "stopping the other ranks"});
      kill_at_ = Clock::now() + grace_;
    }
    say(reason + (n > 0 ? "; sent SIGTERM to the other " + std::to_string(n) + " rank(s), SIGKILL after " +
                              seconds(o_.stopGraceS)
                        : ""));
  }

  void killAll(const std::string& why) {
    int n = signalLive(SIGKILL);
    record(protocol::SignalForwardedEvent{"SIGKILL", n, why});
    say(why + ": sent SIGKILL to " + std::to_string(n) + " rank(s)");
    if (!failed_) {
      failed_ = true;
      reason_ = why;
    }
    stopping_ = true;
    kill_at_.reset();
    give_up_at_ =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kKillWaitS));
  }

  void reap() {
    for (auto& r : ranks_) {
      if (!r.live) continue;
      int status = 0;
      pid_t got;
      do {
        got = ::waitpid(r.pid, &status, WNOHANG);
      } while (got < 0 && errno == EINTR);
      if (got == 0) continue;
      r.live = false;
      protocol::RankExitedEvent e{
          r.rank,       r.pid, std::nullopt,
          std::nullopt, "",    std::chrono::duration<double>(Clock::now() - r.start).count()};
      if (got < 0) {
        e.exit_code = -1;  // not our child any more: nothing to learn
        say("rank " + std::to_string(r.rank) + " (pid " + std::to_string(r.pid) +
            ") cannot be waited for: " + std::strerror(errno));
      } else if (WIFSIGNALED(status)) {
        e.signal = WTERMSIG(status);
        e.signal_name = signalName(*e.signal);
      } else {
        e.exit_code = WEXITSTATUS(status);
      }
      record(e);
      std::string what = protocol::describeExit(e);
      if (e.signal || e.exit_code != 0) {
        fail(what, r.rank);
      } else {
        say(what + " after " + seconds(e.wall_s));
      }
    }
  }

  void checkDeadlines() {
    auto now = Clock::now();
    if (kill_at_ && now >= *kill_at_ && liveCount() > 0) {
      killAll("rank(s) " + liveList() + " still running " + seconds(o_.stopGraceS) +
              " after the stop signal");
    }
    if (give_up_at_ && now >= *give_up_at_ && liveCount() > 0) {
      std::string stuck =
          "rank(s) " + liveList() + " did not exit within " + seconds(kKillWaitS) + " of SIGKILL";
      say(stuck + "; giving up on them");
      reason_ += "; " + stuck;
      gave_up_ = true;
    }
  }

  int pollTimeoutMs() const {
    int ms = kMaxPollMs;
    auto now = Clock::now();
    for (const auto& deadline : {kill_at_, give_up_at_}) {
      if (!deadline) continue;
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - now).count();
      ms = static_cast<int>(std::clamp<long long>(left, 0, ms));
    }
    return ms;
  }

  NodeAgentResult finish() {
    NodeAgentResult result;
    result.exitCode = failed_ ? 1 : 0;
    if (failed_ && restarts_ > 0 && !signalled_ && !start_failed_ && !gave_up_) {
      // "rank 1 failed again after 1 restart (--max-restarts / launch.max_restarts: 1): rank 1 (pid 4321)
      // ..."
      std::string who = failed_rank_ ? "rank " + std::to_string(*failed_rank_) : std::string("a rank");
      reason_ = who + " failed again after " + std::to_string(restarts_) + " restart" +
                (restarts_ == 1 ? "" : "s") +
                " (--max-restarts / launch.max_restarts: " + std::to_string(o_.maxRestarts) + "): " + reason_;
    }
    result.reason =
        failed_ ? reason_ : (stop_cause_.empty() ? "" : stop_cause_ + "; ") + "every rank exited with code 0";
    record(protocol::AgentFinishedEvent{result.exitCode, result.reason});
    say(result.reason);
    return result;
  }

  const NodeAgentOptions& o_;
  std::string node_;
  RankCommand command_;
  AgentEventLog events_;
  std::map<std::string, std::string> env_;
  AgentSignals& signals_;
  std::ostream& log_;
  Clock::duration grace_;

  std::vector<RankState> ranks_;
  bool stopping_ = false;           // the ranks were told to stop (or some failed to start)
  bool failed_ = false;             // the agent will exit 1 with reason_
  bool gave_up_ = false;            // ranks that SIGKILL could not end are left behind
  bool signalled_ = false;          // SIGTERM, SIGINT or SIGHUP came: a stop, never restarted
  bool start_failed_ = false;       // a rank could not be started: not restarted either
  int restarts_ = 0;                // attempts after the first so far
  std::optional<int> failed_rank_;  // the rank whose exit failed this attempt, if one did
  std::int64_t failed_ms_ = 0;      // unix ms of this attempt's failure
  std::string last_reason_;         // why the current attempt was started
  int sigints_ = 0;
  std::string reason_;      // the first failure
  std::string stop_cause_;  // "received SIGTERM" when a signal asked for the stop
  std::optional<Clock::time_point> kill_at_, give_up_at_;
  bool event_error_reported_ = false;
};

}  // namespace

StatusOr<NodeAgentResult> runNodeAgent(const NodeAgentOptions& options, std::ostream& log) {
  Status valid = validateAgentOptions(options);
  if (!valid) return valid;
  auto env = currentEnvironment();
  auto path = env.find("PATH");
  auto command =
      resolveRankCommand(options, path != env.end() ? path->second : "/usr/local/bin:/usr/bin:/bin");
  if (!command) return command.status();
  protocol::RunDir dir(options.runDir);
  Status created = dir.create();
  if (!created) return created;
  std::string node = options.nodeName.empty() ? localHostName() : options.nodeName;
  auto events = AgentEventLog::open(dir.agentEventsFile(node));
  if (!events) return events.status();
  auto signals = AgentSignals::install();
  if (!signals) return signals.status();
  if (options.nnodes > 1 && (options.masterAddr == "127.0.0.1" || options.masterAddr == "localhost")) {
    log << "flamingo-train launch: warning: --nnodes " << options.nnodes << " with --master-addr "
        << options.masterAddr << ": ranks on other nodes cannot reach rank 0 there\n";
  }
  Agent agent(options, node, std::move(command).value(), std::move(events).value(), std::move(env),
              *signals.value(), log);
  return agent.run();
}

}  // namespace fs::launch
