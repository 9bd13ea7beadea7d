#include "app/cluster/agent_liveness.h"

#include <mutex>

#include "app/launch/ssh/remote_agent.h"

namespace fs::app::cluster {
namespace {

struct CheckState {
  std::shared_ptr<remote::Host> attached;
  std::string run_dir;
  HostOpener open;
  std::mutex mutex;
  std::optional<protocol::LaunchRecord> record;  // cached once read
};

std::optional<bool> check(CheckState& s) {
  std::lock_guard lock(s.mutex);
  if (!s.record) {
    auto record = readLaunchRecord(*s.attached, s.run_dir);
    if (!record.isOk()) return std::nullopt;  // not written yet, or unreadable: ask again later
    s.record = std::move(record).value();
  }
  if (s.record->nodes.empty()) return std::nullopt;  // SLURM: no agents of ours
  bool unknown = false;
  for (const protocol::LaunchedNode& node : s.record->nodes) {
    std::shared_ptr<remote::Host> host;
    if (node.node_rank == 0) {
      host = s.attached;
    } else if (s.open) {
      auto opened = s.open(node.host);
      if (opened.isOk()) host = opened.value();
    }
    if (!host) {
      unknown = true;
      continue;
    }
    // The directory this check was made for, not the one launch.json claims (NOTE [Whose agent]).
    auto state = probeAgent(*host, recordedAgent(node, s.run_dir));
    if (!state.isOk()) {
      unknown = true;
      continue;
    }
    if (state.value() == AgentState::kAlive) return true;
  }
  if (unknown) return std::nullopt;
  return false;
}

}  // namespace

ProcessAliveFn agentsAliveCheck(std::shared_ptr<remote::Host> attached, std::string runDir, HostOpener open) {
  auto state = std::make_shared<CheckState>();
  state->attached = std::move(attached);
  state->run_dir = std::move(runDir);
  state->open = std::move(open);
  return [state](const protocol::RunManifest&) { return check(*state); };
}

}  // namespace fs::app::cluster
