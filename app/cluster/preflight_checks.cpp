#include "app/cluster/preflight_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "backend/protocol/wire/events.h"

namespace fs::app::cluster {
namespace {

using protocol::Status;

PreflightRow row(const RowContext& ctx, CheckKind check, CheckStatus status, std::string value,
                 std::string action = {}) {
  return {ctx.host, ctx.node,         check,
          status,   std::move(value), action.empty() ? std::string() : ctx.host + ": " + action};
}

std::string firstLine(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) return line.substr(0, 200);
  }
  return "";
}

std::string where(const RowContext& ctx) {
  return ctx.engine_path.empty() ? "on the login PATH" : "at " + ctx.engine_path;
}

bool notFound(const protocol::StatusOr<remote::CommandResult>& r) {
  if (!r) return r.status().code() == Status::Code::kNotFound;
  return r->exit_code == 127;
}

}  // namespace

std::string formatBytes(std::uint64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof(buf), "%.1f GiB", b / (1ull << 30));
  } else if (bytes >= (1ull << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / (1ull << 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%llu bytes", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

std::string formatSeconds(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%+.1f s", seconds);
  return buf;
}

protocol::StatusOr<nlohmann::json> commandJson(const RowContext& ctx, const std::string& what,
                                               const protocol::StatusOr<remote::CommandResult>& r) {
  const std::string cmd = "flamingo-train " + what;
  if (!r) return Status::ioError(ctx.host + ": " + cmd + ": " + r.status().message());
  std::istringstream in(r->out);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  auto j = nlohmann::json::parse(last, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded() && j.is_object()) return j;
  if (r->exit_code != 0) {
    const std::string why = firstLine(r->err).empty() ? firstLine(r->out) : firstLine(r->err);
    if (why.find("unknown command") != std::string::npos || why.find("unknown option") != std::string::npos)
      return Status::unsupported(ctx.host + ": the flamingo-train " + where(ctx) + " has no '" + what +
                                 "' (an older engine: " + why +
                                 "); install the flamingo-train that matches this Flamingo Studio");
    return Status::ioError(ctx.host + ": " + cmd + " failed" +
                           (r->exit_code >= 0 ? " with exit code " + std::to_string(r->exit_code)
                                              : " (signal " + r->signal + ")") +
                           (why.empty() ? "" : ": " + why));
  }
  return Status::corruption(ctx.host + ": " + cmd + " printed no JSON object (got '" + last.substr(0, 80) +
                            "')");
}

PreflightRow judgeEngine(const RowContext& ctx, const protocol::StatusOr<remote::CommandResult>& r,
                         bool requireEngine, bool* usable) {
  *usable = false;
  const CheckKind k = CheckKind::kEngine;
  if (notFound(r)) {
    return row(
        ctx, k, CheckStatus::kFail, "not found " + where(ctx),
        ctx.engine_path.empty()
            ? "flamingo-train not found on the login PATH; set the engine path for this host"
            : "flamingo-train not found at " + ctx.engine_path + "; correct the engine path for this host");
  }
  if (r && r->exit_code == 126) {
    return row(ctx, k, CheckStatus::kFail, "not executable " + where(ctx),
               "flamingo-train " + where(ctx) + " cannot be executed (" + firstLine(r->err) +
                   "); check its permissions or the engine path for this host");
  }
  auto j = commandJson(ctx, "version --json", r);
  if (!j) {
    const bool old = j.status().code() == Status::Code::kUnsupported ||
                     (r && r->exit_code == 2 && r->err.find("version") != std::string::npos);
    return row(
        ctx, k, CheckStatus::kFail, old ? "too old: no 'version --json'" : "did not run",
        old ? "the flamingo-train " + where(ctx) +
                  " is older than this Flamingo Studio (no 'version --json'); install a matching engine"
            : j.status().message().substr(ctx.host.size() + 2) +
                  (r ? "; check the engine on this host" : "; check the connection to this host"));
  }
  const std::string engineVersion = j->value("engine_version", std::string("?"));
  if (!j->contains("protocol_major") || !(*j)["protocol_major"].is_number_integer()) {
    return row(ctx, k, CheckStatus::kFail, "no protocol_major (engine " + engineVersion + ")",
               "flamingo-train version --json printed no protocol_major; install a matching engine");
  }
  *usable = true;
  const int theirs = (*j)["protocol_major"].get<int>();
  const std::string value = "protocol " + std::to_string(theirs) + " (engine " + engineVersion + ")";
  if (theirs != protocol::kEventSchemaMajor) {
    return row(ctx, k, CheckStatus::kFail, value,
               "the engine speaks protocol " + std::to_string(theirs) + " (engine " + engineVersion +
                   ") but this Flamingo Studio speaks protocol " +
                   std::to_string(protocol::kEventSchemaMajor) +
                   "; install the flamingo-train that matches this Flamingo Studio on this host");
  }
  if (requireEngine && !j->value("engine", false)) {
    return row(ctx, k, CheckStatus::kFail, value + ", tools only",
               "this flamingo-train was built without the LibTorch engine and cannot train; install a "
               "full build on this host");
  }
  return row(ctx, k, CheckStatus::kOk, value);
}

// NOTE [Pre-flight thresholds]
// Disk: a checkpoint of the smallest preset is a few hundred MiB and of the
// OpenFlamingo-3B/9B models 10-40 GiB (x2 while the next one is written), so
// below 1 GiB even events, logs and one small checkpoint may not fit (fail), and
// below 10 GiB a real model's first checkpoint likely will not (warn).
// Clock: NTP keeps machines within milliseconds, so a difference over 1 s means
// a host has no time sync (warn): per-node logs and timings no longer line up.
// From 30 s on, the monitor misjudges runs: it compares this computer's clock
// with rank 0's event times and calls a run stalled after
// StallOptions::floor_s = 30 s (app/monitor/stall_detector.h), and per-node
// agent events and heartbeats are compared on one timeline (fail). Judged on
// the smallest skew the measurement allows (|skew| - uncertainty), so a slow
// SSH round trip alone never fails a host.
PreflightRow judgeDisk(const RowContext& ctx, const nlohmann::json& facts) {
  const CheckKind k = CheckKind::kDisk;
  const auto& rr = facts.contains("run_root") ? facts["run_root"] : nlohmann::json::object();
  const std::string path = rr.value("path", std::string());
  const std::string freePath = rr.value("free_path", path);
  const bool exists = rr.value("exists", false);
  if (!rr.value("writable", false)) {
    const std::string error = rr.value("error", std::string("not writable"));
    return row(ctx, k, CheckStatus::kFail, "cannot write: " + error,
               "cannot write to the run root " + path + " (" + error +
                   "); choose a run root this user can write, or fix its permissions");
  }
  if (!rr.contains("free_bytes") || !rr["free_bytes"].is_number_unsigned()) {
    return row(ctx, k, CheckStatus::kWarn, "free space unknown in " + freePath,
               "could not read the free space of " + freePath + "; check it by hand");
  }
  const auto freeBytes = rr["free_bytes"].get<std::uint64_t>();
  std::string value = formatBytes(freeBytes) + " free in " + freePath;
  if (!exists) value += " (" + path + " will be created)";
  if (freeBytes < kDiskFailBytes)
    return row(ctx, k, CheckStatus::kFail, value,
               "only " + formatBytes(freeBytes) + " free in " + freePath +
                   "; free space there or choose another run root (at least " + formatBytes(kDiskWarnBytes) +
                   " recommended)");
  if (freeBytes < kDiskWarnBytes)
    return row(ctx, k, CheckStatus::kWarn, value,
               "only " + formatBytes(freeBytes) + " free in " + freePath + "; checkpoints may not fit (" +
                   formatBytes(kDiskWarnBytes) + " or more recommended)");
  return row(ctx, k, CheckStatus::kOk, value);
}

PreflightRow judgeResources(const RowContext& ctx, const nlohmann::json& facts, int gpusPerNode) {
  const CheckKind k = CheckKind::kResources;
  const auto cores = facts.value("cores", nlohmann::json::object());
  const int online = cores.value("online", 0);
  const int usable =
      cores.contains("usable") && cores["usable"].is_number() ? cores["usable"].get<int>() : online;
  std::string value = usable < online ? std::to_string(usable) + " of " + std::to_string(online) + " cores"
                                      : std::to_string(online) + " cores";
  const auto gpus = facts.value("gpus", nlohmann::json::object());
  const auto devices = gpus.value("devices", nlohmann::json::array());
  std::vector<std::pair<std::string, int>> models;  // in first-seen order
  for (const auto& d : devices) {
    const std::string name = d.value("name", std::string("GPU"));
    auto it = std::find_if(models.begin(), models.end(), [&](const auto& m) { return m.first == name; });
    if (it == models.end()) {
      models.emplace_back(name, 1);
    } else {
      ++it->second;
    }
  }
  for (const auto& [name, count] : models) value += ", " + std::to_string(count) + " x " + name;
  const bool smi = gpus.value("nvidia_smi", false);
  if (models.empty()) value += smi ? ", no GPUs" : ", no GPUs (no nvidia-smi)";
  const int found = static_cast<int>(devices.size());
  if (gpus.contains("error")) {
    const std::string error = gpus["error"].get<std::string>();
    return row(ctx, k, gpusPerNode > found ? CheckStatus::kFail : CheckStatus::kWarn, value,
               "nvidia-smi failed (" + error + "); check the GPU driver on this host");
  }
  if (gpusPerNode > found) {
    return row(ctx, k, CheckStatus::kFail, value,
               "the run needs " + std::to_string(gpusPerNode) + " GPUs per node but this host has " +
                   std::to_string(found) + (smi ? "" : " (nvidia-smi is not on the login PATH)") +
                   "; lower the ranks per node or choose nodes with enough GPUs");
  }
  return row(ctx, k, CheckStatus::kOk, value);
}

PreflightRow judgeClock(const RowContext& ctx, double skew, double uncertainty,
                        const std::string& reference) {
  const CheckKind k = CheckKind::kClock;
  char bound[32];
  std::snprintf(bound, sizeof(bound), " (+-%.1f s)", uncertainty);
  const std::string value =
      "skew " + formatSeconds(skew) + (uncertainty >= 0.05 ? bound : "") + " against " + reference;
  const double atLeast = std::fabs(skew) - uncertainty;
  const std::string action = "the clock is " + formatSeconds(skew) + " off " + reference +
                             "; enable time sync (NTP, chrony or systemd-timesyncd) on both";
  if (atLeast > kSkewFailSeconds) return row(ctx, k, CheckStatus::kFail, value, action);
  if (atLeast > kSkewWarnSeconds) return row(ctx, k, CheckStatus::kWarn, value, action);
  return row(ctx, k, CheckStatus::kOk, value);
}

PreflightRow skippedRow(const RowContext& ctx, CheckKind check, const std::string& why) {
  return {ctx.host, ctx.node, check, CheckStatus::kSkipped, "not checked: " + why, {}};
}

}  // namespace fs::app::cluster
