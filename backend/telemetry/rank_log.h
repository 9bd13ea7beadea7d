// Each rank's human-readable log: <run>/logs/rank-<r>.log, optionally mirrored to stderr.
//
// Lines look like
//   2024-06-01 12:00:00.123 [rank 3] [warning] loss is nan at step 120
// The file is opened for appending (a resumed attempt continues the same file) and is
// never truncated. Logging is synchronous: a line is formatted and handed to the C
// library on the calling thread; lines at `flush_level` or above are written through
// to the kernel at once, so they survive a crash of the process. Nothing is fsynced:
// the log is for humans, the run's durable record is events.jsonl.
//
// Thread-safety: the returned logger may be used from any thread (spdlog "_mt" sinks).
// Ownership: the caller shares ownership of the logger; the file closes with the last
// reference (and spdlog's registry holds one when make_default is set).
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::telemetry {

struct RankLogOptions {
  spdlog::level::level_enum level = spdlog::level::info;         // lowest level written to the file
  bool to_stderr = true;                                         // mirror to stderr
  spdlog::level::level_enum stderr_level = spdlog::level::info;  // lowest level mirrored
  spdlog::level::level_enum flush_level = spdlog::level::info;   // write through at this level and above
  bool make_default = false;  // also install as spdlog's default logger (spdlog::info(...))
};

// Opens logs/rank-<rank>.log in `run_dir` (creating logs/ if needed). The logger is
// named "rank-<rank>". IOError names the file; InvalidArgument for rank < 0.
protocol::StatusOr<std::shared_ptr<spdlog::logger>> openRankLog(const protocol::RunDir& run_dir, int rank,
                                                                const RankLogOptions& options = {});

// The file pattern for `rank` (spdlog syntax): time, rank, level, message.
std::string rankLogPattern(int rank);

}  // namespace fs::telemetry
