#include "backend/protocol/wire/launch_record.h"

#include <nlohmann/json.hpp>

#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/json_fields.h"
#include "backend/protocol/wire/versioned_document.h"

namespace fs::protocol {

// The one field list of launch.json (docs/run-directory.md).
template <class V>
void describe(V& v, LaunchedNode& n) {
  v.req("node_rank", n.node_rank);
  v.req("host", n.host);
  v.req("address", n.address);
  v.req("agent_pid", n.agent_pid);
  v.req("boot_id", n.boot_id);
  v.req("start_ticks", n.start_ticks);
  v.req("started", n.started);
}

template <class V>
void describe(V& v, LaunchedJob& j) {
  v.req("login", j.login);
  v.req("job_id", j.job_id);
  v.req("script", j.script);
}

template <class V>
void describe(V& v, LaunchRecord& r) {
  v.req("schema_version", r.schema_version);
  v.req("launcher", r.launcher);
  v.req("run_dir", r.run_dir);
  v.req("created", r.created);
  v.opt("shared_fs", r.shared_fs);
  v.req("nodes", r.nodes);
  v.opt("slurm", r.slurm);
}

Status validateLaunchRecord(const LaunchRecord& r) {
  auto bad = [](const std::string& what) { return Status::invalidArgument("launch.json: " + what); };
  if (r.launcher == LauncherKind::kLocal) return bad("launcher is 'local'; expected 'ssh' or 'slurm'");
  if (r.run_dir.empty() || r.run_dir.front() != '/') {
    return bad("run_dir is '" + r.run_dir + "'; expected an absolute path");
  }
  if (r.created < 0) return bad("created is " + std::to_string(r.created) + "; expected unix milliseconds");
  if (r.launcher == LauncherKind::kSsh && r.nodes.empty())
    return bad("nodes is empty; an ssh launch has one per node");
  if (r.launcher == LauncherKind::kSlurm && !r.slurm)
    return bad("slurm is missing; a slurm launch names its job");
  for (std::size_t i = 0; i < r.nodes.size(); ++i) {
    const LaunchedNode& n = r.nodes[i];
    const std::string at = "nodes[" + std::to_string(i) + "].";
    if (n.node_rank != static_cast<int>(i)) {
      return bad(at + "node_rank is " + std::to_string(n.node_rank) + "; expected " + std::to_string(i) +
                 " (nodes in node rank order)");
    }
    if (n.host.empty()) return bad(at + "host is empty");
    if (n.agent_pid <= 0) return bad(at + "agent_pid is " + std::to_string(n.agent_pid) + "; expected a pid");
    if (n.boot_id.empty()) return bad(at + "boot_id is empty");
    if (n.start_ticks <= 0) {
      return bad(at + "start_ticks is " + std::to_string(n.start_ticks) +
                 "; expected the process start time");
    }
  }
  if (r.slurm && r.slurm->job_id.empty()) return bad("slurm.job_id is empty");
  return Status::ok();
}

std::string encodeLaunchRecord(const LaunchRecord& r) {
  LaunchRecord copy = r;
  copy.schema_version = std::string(kLaunchRecordSchemaVersion);
  return json_fields::toJson(copy).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

StatusOr<LaunchRecord> decodeLaunchRecord(std::string_view text, std::string_view source) {
  std::string src(source);
  auto parsed = parseVersionedDocument(text, src, {kLaunchRecordSchemaMajor, kLaunchRecordSchemaMinor});
  if (!parsed) return parsed.status();
  nlohmann::json& obj = parsed.value();

  LaunchRecord r;
  if (std::string error = json_fields::readRecord(obj, r); !error.empty()) {
    return Status::corruption(src + ": " + error);
  }
  if (Status valid = validateLaunchRecord(r); !valid) {
    std::string msg = valid.message();
    if (msg.starts_with("launch.json: ")) msg = msg.substr(13);
    return Status::corruption(src + ": " + msg);
  }
  return r;
}

}  // namespace fs::protocol
