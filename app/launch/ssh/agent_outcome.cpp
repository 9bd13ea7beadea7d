#include "app/launch/ssh/agent_outcome.h"

#include "app/launch/ssh/remote_agent.h"
#include "app/launch/ssh/ssh_launch.h"
#include "backend/protocol/wire/agent_events.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::app::cluster {

using protocol::Status;
using protocol::StatusOr;

StatusOr<AgentsOutcome> checkAgents(const std::vector<std::shared_ptr<remote::Host>>& hosts,
                                    const protocol::LaunchRecord& record) {
  if (hosts.size() != record.nodes.size()) {
    return Status::invalidArgument("checkAgents: " + std::to_string(hosts.size()) + " hosts for " +
                                   std::to_string(record.nodes.size()) + " nodes");
  }
  AgentsOutcome out;
  std::vector<std::string> names;
  for (const auto& n : record.nodes) names.push_back(n.host);
  for (std::size_t i = 0; i < record.nodes.size(); ++i) {
    const auto& n = record.nodes[i];
    auto state = probeAgent(*hosts[i], recordedAgent(n, record.run_dir));
    if (!state) return state.status();
    if (state.value() == AgentState::kAlive) ++out.alive;
  }
  if (out.alive > 0) return out;
  out.finished = true;
  const bool shared = record.shared_fs.value_or(true);
  for (std::size_t i = 0; i < record.nodes.size(); ++i) {
    remote::Host& holder = shared ? *hosts[0] : *hosts[i];
    const std::string file = record.run_dir + "/" + protocol::agentEventsFileName(nodeName(names, i));
    auto text = holder.readFile(file, 0, 16u << 20);
    std::optional<protocol::AgentFinishedEvent> end;
    if (text) {
      for (const auto& e : protocol::decodeAgentEvents(text.value(), file).events) {
        if (const auto* f = std::get_if<protocol::AgentFinishedEvent>(&e.body)) end = *f;
      }
    }
    const std::string node = "node " + std::to_string(i) + " (" + record.nodes[i].host + ")";
    if (!end) {
      if (!out.crashed && out.exit_code == 0) {
        out.crashed = true;
        out.exit_code = 9;
        out.message = node + ": the agent ended without recording how (killed, or its host went down)";
      }
      continue;
    }
    if (end->exit_code != 0 && out.exit_code == 0) {
      out.exit_code = end->exit_code;
      out.message = node + ": agent exited with code " + std::to_string(end->exit_code) +
                    (end->reason.empty() ? std::string() : ": " + end->reason);
    }
  }
  if (out.message.empty()) out.message = "every node agent exited with code 0";
  return out;
}

}  // namespace fs::app::cluster
