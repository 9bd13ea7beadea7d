// Node agent events: what `flamingo-train launch` appends to <run_dir>/agent-<node>.jsonl
// (agentEventsFileName in run_dir.h; docs/run-directory.md is the normative schema).
//
// Wire: one JSON object per line, header first, like events.jsonl:
//   {"v":"1.0","seq":3,"t":1718000000123,"type":"exited","rank":1,"pid":4321,...}
// `seq` is gap-free from 0 within one file, `t` unix milliseconds (unixMillisNow).
// Types, in the order an agent writes them:
//   agent_started     once, before any rank starts
//   spawned           one per rank started
//   signal_forwarded  the agent sent a signal to its live ranks (forwarded or its own)
//   stopping          a rank failed (or a signal asked): the agent stops the others
//   exited            one per rank, when the agent reaped it: exit code xor signal
//   restarting        (--max-restarts) every rank exited after a failure: the next
//                     attempt's spawned events follow (schema 1.1)
//   agent_finished    once, last: the agent's exit code and why
//
// Compatibility, as for telemetry: unknown fields are ignored, an unknown `type` is
// skipped (NotFound from decodeAgentEvent), a newer major `v` is rejected.
//
// Thread-safety: plain values and stateless functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::protocol {

inline constexpr int kAgentEventSchemaMajor = 1;
inline constexpr int kAgentEventSchemaMinor = 1;
inline constexpr std::string_view kAgentEventSchemaVersion = "1.1";

struct AgentStartedEvent {
  static constexpr std::string_view kType = "agent_started";
  std::string node;  // the name in agent-<node>.jsonl
  int node_rank = 0;
  int nnodes = 1;
  int nproc_per_node = 1;
  std::string master_addr;
  int master_port = 0;
  std::string host;                  // this machine's host name
  std::int64_t pid = 0;              // the agent's process id
  std::vector<std::string> command;  // argv every rank runs (as resolved)
  bool operator==(const AgentStartedEvent&) const = default;
};

struct RankSpawnedEvent {
  static constexpr std::string_view kType = "spawned";
  int rank = 0;
  int local_rank = 0;
  std::int64_t pid = 0;
  bool operator==(const RankSpawnedEvent&) const = default;
};

// Exactly one of exit_code and signal is set.
struct RankExitedEvent {
  static constexpr std::string_view kType = "exited";
  int rank = 0;
  std::int64_t pid = 0;
  std::optional<int> exit_code;  // exited normally with this code
  std::optional<int> signal;     // killed by this signal number ...
  std::string signal_name;       // ... named like "SIGKILL"
  double wall_s = 0;             // from spawn to reap
  bool operator==(const RankExitedEvent&) const = default;
};

struct SignalForwardedEvent {
  static constexpr std::string_view kType = "signal_forwarded";
  std::string signal;  // "SIGTERM", "SIGINT", "SIGKILL"
  int ranks = 0;       // live ranks it was sent to
  std::string reason;  // optional, e.g. "received SIGTERM", "grace period of 30 s over"
  bool operator==(const SignalForwardedEvent&) const = default;
};

struct AgentStoppingEvent {
  static constexpr std::string_view kType = "stopping";
  std::string reason;       // e.g. "rank 3 (pid 1234) exited with code 1"
  std::optional<int> rank;  // the rank whose exit caused it, if one did
  bool operator==(const AgentStoppingEvent&) const = default;
};

// The agent starts every rank again (NOTE [Restarts] in backend/launch/node_agent.h).
struct AgentRestartingEvent {
  static constexpr std::string_view kType = "restarting";
  int attempt = 1;          // the attempt about to start: 1 for the first restart
  int max_restarts = 0;     // the agent's --max-restarts
  std::string reason;       // the failure that ended the previous attempt
  std::optional<int> rank;  // the rank whose exit it was, if one
  bool operator==(const AgentRestartingEvent&) const = default;
};

struct AgentFinishedEvent {
  static constexpr std::string_view kType = "agent_finished";
  int exit_code = 0;
  std::string reason;
  bool operator==(const AgentFinishedEvent&) const = default;
};

using AgentEventBody =
    std::variant<AgentStartedEvent, RankSpawnedEvent, RankExitedEvent, SignalForwardedEvent,
                 AgentStoppingEvent, AgentRestartingEvent, AgentFinishedEvent>;

struct AgentEvent {
  std::uint64_t seq = 0;
  std::int64_t t = 0;
  AgentEventBody body;
  bool operator==(const AgentEvent&) const = default;
};

std::string_view agentEventType(const AgentEventBody& body);
const std::vector<std::string_view>& knownAgentEventTypes();

// "rank 1 (pid 4321) exited with code 3" / "rank 1 (pid 4321) was killed by SIGKILL".
std::string describeExit(const RankExitedEvent& e);

// The line for `event`, ending in '\n'.
std::string encodeAgentEvent(const AgentEvent& event);

// Decodes one line (no '\n'; a trailing '\r' is allowed). Errors name `source` and the
// field: Corruption for malformed lines and bad fields, Unsupported for another major
// version, NotFound for a well-formed line of an unknown type (skip it).
StatusOr<AgentEvent> decodeAgentEvent(std::string_view line, std::string_view source = "agent.jsonl");

// A whole file's text.
struct AgentEventFile {
  std::vector<AgentEvent> events;    // in file order
  std::vector<Status> errors;        // one per bad line, "<source> line N: ..."
  std::uint64_t skipped = 0;         // lines of unknown types
  std::uint64_t complete_bytes = 0;  // bytes up to the last '\n': a partial last line after
                                     // it is not decoded (a writer still writing it)
};
AgentEventFile decodeAgentEvents(std::string_view text, std::string_view source = "agent.jsonl");

}  // namespace fs::protocol
