// The judgements behind the pre-flight table (preflight.h): one row from what
// one host's command printed. Internal to fs_app_cluster; pure functions, so
// every threshold is testable without a cluster.
//
// Thread-safety: free functions on values.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "app/cluster/preflight.h"
#include "backend/protocol/status.h"

namespace fs::app::cluster {

// Who a row is about: the host's name, its node index, its configured engine path.
struct RowContext {
  std::string host;
  int node = 0;
  std::string engine_path;  // empty: found by name on the login PATH
};

// "23.4 GiB", "512.0 MiB", "12 bytes".
std::string formatBytes(std::uint64_t bytes);
// "+0.8 s", "-12.0 s".
std::string formatSeconds(double seconds);

// The JSON object a flamingo-train command printed on its last non-empty
// stdout line, or why there is none (naming the host and the command).
protocol::StatusOr<nlohmann::json> commandJson(const RowContext& ctx, const std::string& what,
                                               const protocol::StatusOr<remote::CommandResult>& result);

// `version --json`: found, runs, protocol major equal to this build's (and an
// engine built with LibTorch when requireEngine). *usable: the host can run
// the probes (the executable ran and printed version JSON).
PreflightRow judgeEngine(const RowContext& ctx, const protocol::StatusOr<remote::CommandResult>& result,
                         bool requireEngine, bool* usable);
// `probe host`'s run_root object.
PreflightRow judgeDisk(const RowContext& ctx, const nlohmann::json& facts);
// `probe host`'s cores, memory and gpus.
PreflightRow judgeResources(const RowContext& ctx, const nlohmann::json& facts, int gpusPerNode);
// Clock difference to a reference clock (node 0, or this computer for node 0),
// measured to within +-uncertainty seconds.
PreflightRow judgeClock(const RowContext& ctx, double skewSeconds, double uncertaintySeconds,
                        const std::string& reference);
// A row for a check that did not run, pointing at the row that says why.
PreflightRow skippedRow(const RowContext& ctx, CheckKind check, const std::string& why);

}  // namespace fs::app::cluster
