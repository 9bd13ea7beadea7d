// `flamingo-train probe host`: facts about this machine that the app's
// pre-flight (app/cluster/preflight.h) judges before a launch: cores, memory,
// the run root (exists, writable, free bytes), GPUs from nvidia-smi, and this
// machine's clock. Torch-free: it works in the tools-only build.
//
// Thread-safety: free functions; probeHost spawns nvidia-smi and waits for it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::cli {

// nvidia-smi is ended after this long (a hung driver must not hang the pre-flight).
inline constexpr int kNvidiaSmiTimeoutMs = 15'000;

// One command's outcome, for a program started as an argument vector.
struct SpawnResult {
  int exit_code = -1;  // -1: ended by a signal or timed out
  bool timed_out = false;
  std::string out;  // stdout (stderr is discarded)
};

// Runs argv[0] from PATH with the arguments verbatim, stdin from /dev/null;
// ends it with SIGKILL after timeout_ms. IOError when it cannot be started.
protocol::StatusOr<SpawnResult> spawnAndWait(const std::vector<std::string>& argv, int timeout_ms);

// The full path of `program` in PATH, or "" when it is not there.
std::string findInPath(const std::string& program);

// This machine's clock, unix milliseconds.
std::int64_t unixTimeMs();

// The JSON object that `probe host --run-root DIR` prints (format in cmd_probe.cpp's help).
nlohmann::json probeHost(const std::string& run_root);

}  // namespace fs::cli
