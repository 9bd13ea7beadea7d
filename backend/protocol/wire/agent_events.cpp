#include "backend/protocol/wire/agent_events.h"

#include <cstdio>
#include <utility>

#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/json_fields.h"

namespace fs::protocol {

// ---- field lists: the one implementation of docs/run-directory.md (agent-<node>.jsonl) ----

template <class V>
void describe(V& v, AgentStartedEvent& e) {
  v.opt("node", e.node);
  v.req("node_rank", e.node_rank);
  v.req("nnodes", e.nnodes);
  v.req("nproc_per_node", e.nproc_per_node);
  v.req("master_addr", e.master_addr);
  v.req("master_port", e.master_port);
  v.req("host", e.host);
  v.req("pid", e.pid);
  v.req("command", e.command);
}

template <class V>
void describe(V& v, RankSpawnedEvent& e) {
  v.req("rank", e.rank);
  v.req("local_rank", e.local_rank);
  v.req("pid", e.pid);
}

template <class V>
void describe(V& v, RankExitedEvent& e) {
  v.req("rank", e.rank);
  v.req("pid", e.pid);
  v.opt("exit_code", e.exit_code);
  v.opt("signal", e.signal);
  v.opt("signal_name", e.signal_name);
  v.req("wall_s", e.wall_s);
}

template <class V>
void describe(V& v, SignalForwardedEvent& e) {
  v.req("signal", e.signal);
  v.req("ranks", e.ranks);
  v.opt("reason", e.reason);
}

template <class V>
void describe(V& v, AgentStoppingEvent& e) {
  v.req("reason", e.reason);
  v.opt("rank", e.rank);
}

template <class V>
void describe(V& v, AgentRestartingEvent& e) {
  v.req("attempt", e.attempt);
  v.req("max_restarts", e.max_restarts);
  v.req("reason", e.reason);
  v.opt("rank", e.rank);
}

template <class V>
void describe(V& v, AgentFinishedEvent& e) {
  v.req("exit_code", e.exit_code);
  v.req("reason", e.reason);
}

std::string_view agentEventType(const AgentEventBody& body) {
  return std::visit([](const auto& b) { return std::decay_t<decltype(b)>::kType; }, body);
}

const std::vector<std::string_view>& knownAgentEventTypes() {
  static const std::vector<std::string_view> kTypes = json_fields::variantTypeNames<AgentEventBody>();
  return kTypes;
}

std::string describeExit(const RankExitedEvent& e) {
  std::string who = "rank " + std::to_string(e.rank) + " (pid " + std::to_string(e.pid) + ")";
  if (e.signal) {
    std::string name = e.signal_name.empty() ? "signal " + std::to_string(*e.signal) : e.signal_name;
    return who + " was killed by " + name;
  }
  return who + " exited with code " + std::to_string(e.exit_code.value_or(0));
}

std::string encodeAgentEvent(const AgentEvent& event) {
  auto body = std::visit([](const auto& b) { return json_fields::toJson(b); }, event.body);
  return json_fields::typedLine(kAgentEventSchemaVersion, event.seq, event.t, agentEventType(event.body),
                                body);
}

StatusOr<AgentEvent> decodeAgentEvent(std::string_view line, std::string_view source) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string src(source);
  auto parsed = json_fields::parseObject(line, src);
  if (!parsed) return parsed.status();
  const json_fields::Json& obj = parsed.value();

  // The version first: a newer major may have changed everything else.
  auto v = obj.find("v");
  if (v == obj.end()) return Status::corruption(src + ": missing required field 'v' (schema version)");
  if (!v->is_string()) {
    return Status::corruption(src + ": field 'v' is " + json_fields::brief(*v) +
                              ", expected a string \"MAJOR.MINOR\"");
  }
  auto version = parseSchemaVersion(v->get_ref<const std::string&>());
  if (!version) return Status::corruption(src + ": " + version.status().message());
  Status compatible =
      checkSchemaVersion(version.value(), {kAgentEventSchemaMajor, kAgentEventSchemaMinor}, src);
  if (!compatible) return compatible;

  AgentEvent out;
  std::string type, error;
  json_fields::JsonReader header(obj, "", &error);
  header.req("seq", out.seq);
  header.req("t", out.t);
  header.req("type", type);
  if (!error.empty()) return Status::corruption(src + ": " + error);
  if (!json_fields::readVariant(type, obj, &out.body, &error)) {
    return Status::notFound(src + ": unknown agent event type '" + type + "'");
  }
  if (!error.empty()) return Status::corruption(src + ": " + type + " event: " + error);
  if (const auto* exited = std::get_if<RankExitedEvent>(&out.body);
      exited && exited->exit_code.has_value() == exited->signal.has_value()) {
    return Status::corruption(
        src + ": exited event: expected exactly one of the fields 'exit_code' and 'signal'" +
        (exited->exit_code ? std::string(", found both") : std::string(", found neither")));
  }
  return out;
}

AgentEventFile decodeAgentEvents(std::string_view text, std::string_view source) {
  AgentEventFile out;
  std::uint64_t offset = 0, line_number = 1;
  while (offset < text.size()) {
    std::size_t nl = text.find('\n', offset);
    if (nl == std::string_view::npos) break;  // partial last line: not ours yet
    std::string_view line = text.substr(offset, nl - offset);
    offset = nl + 1;
    out.complete_bytes = offset;
    std::string where = std::string(source) + " line " + std::to_string(line_number++);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto event = decodeAgentEvent(line, where);
    if (event) {
      out.events.push_back(std::move(event).value());
    } else if (event.status().code() == Status::Code::kNotFound) {
      ++out.skipped;
    } else {
      out.errors.push_back(event.status());
    }
  }
  return out;
}

}  // namespace fs::protocol
