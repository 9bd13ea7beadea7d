#include "backend/protocol/wire/run_manifest.h"

#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/json_fields.h"
#include "backend/protocol/wire/versioned_document.h"

namespace fs::protocol {

std::string_view toString(LauncherKind k) {
  switch (k) {
    case LauncherKind::kLocal:
      return "local";
    case LauncherKind::kSsh:
      return "ssh";
    case LauncherKind::kSlurm:
      return "slurm";
  }
  return "?";
}

bool parseEnum(std::string_view text, LauncherKind* out) {
  for (auto k : {LauncherKind::kLocal, LauncherKind::kSsh, LauncherKind::kSlurm}) {
    if (toString(k) == text) {
      *out = k;
      return true;
    }
  }
  return false;
}

std::string_view enumChoices(LauncherKind) {
  return "local|ssh|slurm";
}

template <class V>
void describe(V& v, RunAttempt& a) {
  v.req("attempt", a.attempt);
  v.req("started", a.started);
  v.req("reason", a.reason);
  v.opt("restart", a.restart);
  v.opt("max_restarts", a.max_restarts);
  v.opt("failed", a.failed);
}

// The one field list of run.json (docs/run-directory.md).
template <class V>
void describe(V& v, RunManifest& m) {
  v.req("schema_version", m.schema_version);
  v.req("run_id", m.run_id);
  v.req("engine_version", m.engine_version);
  v.req("created", m.created);
  v.req("world_size", m.world_size);
  v.req("nnodes", m.nnodes);
  v.req("nproc_per_node", m.nproc_per_node);
  v.req("hosts", m.hosts);
  v.req("launcher", m.launcher);
  v.req("state", m.state);
  v.opt("pid", m.pid);
  v.opt("agent_pid", m.agent_pid);
  v.req("updated", m.updated);
  v.opt("config_file", m.config_file);
  v.opt("attempts", m.attempts);
}

namespace {

template <class T>
std::optional<T> wholeNumber(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  T value{};
  const char* end = text + std::strlen(text);
  auto [p, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || p != end || value < 0) return std::nullopt;
  return value;
}

}  // namespace

AttemptEnvironment attemptEnvironment(const char* (*getenv)(const char*)) {
  AttemptEnvironment e;
  if (getenv == nullptr) return e;
  e.restart = wholeNumber<int>(getenv("TORCHELASTIC_RESTART_COUNT"));
  e.max_restarts = wholeNumber<int>(getenv("TORCHELASTIC_MAX_RESTARTS"));
  e.failed = wholeNumber<std::int64_t>(getenv("FLAMINGO_RESTART_FAILED_MS"));
  if (const char* r = getenv("FLAMINGO_RESTART_REASON")) e.reason = r;
  return e;
}

void recordAttempt(RunManifest* m, const AttemptEnvironment& env, std::int64_t now_ms) {
  RunAttempt a;
  a.attempt = static_cast<int>(m->attempts.size());
  a.started = now_ms;
  a.restart = env.restart;
  a.max_restarts = env.max_restarts;
  const bool restarted = env.restart.value_or(0) > 0;
  if (restarted) a.failed = env.failed;
  a.reason = restarted && !env.reason.empty() ? env.reason : a.attempt == 0 ? "start" : "resumed";
  m->attempts.push_back(std::move(a));
}

Status validateManifest(const RunManifest& m) {
  auto bad = [](const std::string& what) { return Status::invalidArgument("run.json: " + what); };
  if (m.run_id.empty()) return bad("run_id is empty; expected the run's id");
  if (m.world_size < 1) return bad("world_size is " + std::to_string(m.world_size) + "; expected >= 1");
  if (m.nnodes < 1) return bad("nnodes is " + std::to_string(m.nnodes) + "; expected >= 1");
  if (m.nproc_per_node < 1)
    return bad("nproc_per_node is " + std::to_string(m.nproc_per_node) + "; expected >= 1");
  if (static_cast<std::int64_t>(m.nnodes) * m.nproc_per_node != m.world_size) {
    return bad("world_size is " + std::to_string(m.world_size) + " but nnodes x nproc_per_node is " +
               std::to_string(m.nnodes) + " x " + std::to_string(m.nproc_per_node) + "; expected them equal");
  }
  if (!m.hosts.empty() && m.hosts.size() != static_cast<std::size_t>(m.nnodes)) {
    return bad("hosts lists " + std::to_string(m.hosts.size()) + " hosts but nnodes is " +
               std::to_string(m.nnodes) + "; expected one host per node (or none while unknown)");
  }
  for (std::size_t i = 0; i < m.hosts.size(); ++i) {
    if (m.hosts[i].empty()) return bad("hosts[" + std::to_string(i) + "] is empty; expected a host name");
  }
  if (m.created < 0) return bad("created is " + std::to_string(m.created) + "; expected unix milliseconds");
  if (m.updated < 0) return bad("updated is " + std::to_string(m.updated) + "; expected unix milliseconds");
  for (std::size_t i = 0; i < m.attempts.size(); ++i) {
    if (m.attempts[i].attempt != static_cast<int>(i)) {
      return bad("attempts[" + std::to_string(i) + "].attempt is " + std::to_string(m.attempts[i].attempt) +
                 "; expected " + std::to_string(i) + " (attempts in order, from 0)");
    }
  }
  if (m.config_file.empty() || m.config_file.find('/') != std::string::npos) {
    return bad("config_file is '" + m.config_file + "'; expected a file name inside the run directory");
  }
  return Status::ok();
}

std::string encodeManifest(const RunManifest& m) {
  RunManifest copy = m;
  copy.schema_version = std::string(kManifestSchemaVersion);
  return json_fields::toJson(copy).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

StatusOr<RunManifest> decodeManifest(std::string_view text, std::string_view source) {
  std::string src(source);
  auto parsed = parseVersionedDocument(text, src, {kManifestSchemaMajor, kManifestSchemaMinor});
  if (!parsed) return parsed.status();
  nlohmann::json& obj = parsed.value();

  RunManifest m;
  std::string error = json_fields::readRecord(obj, m);
  if (!error.empty()) return Status::corruption(src + ": " + error);
  Status valid = validateManifest(m);
  if (!valid) {
    std::string msg = valid.message();
    if (msg.starts_with("run.json: ")) msg = msg.substr(10);
    return Status::corruption(src + ": " + msg);
  }
  return m;
}

StatusOr<RunManifest> readManifest(const std::filesystem::path& run_dir) {
  std::filesystem::path file = RunDir(run_dir).manifestFile();
  auto text = readSmallFile(file, 1u << 20);
  if (!text) return text.status();
  return decodeManifest(text.value(), file.string());
}

Status writeManifest(const std::filesystem::path& run_dir, const RunManifest& m,
                     const AtomicWriteOptions& options) {
  Status valid = validateManifest(m);
  if (!valid) return valid;
  return atomicWriteFile(RunDir(run_dir).manifestFile(), encodeManifest(m), options);
}

StatusOr<RunManifest> updateManifestState(const std::filesystem::path& run_dir, RunState state,
                                          std::int64_t now_ms, WriteEnv* env) {
  auto m = readManifest(run_dir);
  if (!m) return m.status();
  m->state = state;
  m->updated = now_ms;
  AtomicWriteOptions options;
  options.env = env;
  Status written = writeManifest(run_dir, m.value(), options);
  if (!written) return written;
  return m;
}

}  // namespace fs::protocol
