#include "backend/telemetry/rank_log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <vector>

namespace fs::telemetry {

using protocol::Status;
using protocol::StatusOr;

std::string rankLogPattern(int rank) {
  return "%Y-%m-%d %H:%M:%S.%e [rank " + std::to_string(rank) + "] [%l] %v";
}

StatusOr<std::shared_ptr<spdlog::logger>> openRankLog(const protocol::RunDir& run_dir, int rank,
                                                      const RankLogOptions& options) {
  if (rank < 0)
    return Status::invalidArgument("rank log: rank is " + std::to_string(rank) + ", expected >= 0");
  const std::filesystem::path file = run_dir.rankLogFile(rank);
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) return Status::ioError("cannot create " + file.parent_path().string() + ": " + ec.message());
  try {
    std::vector<spdlog::sink_ptr> sinks;
    auto file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file.string(), /*truncate=*/false);
    file_sink->set_level(options.level);
    file_sink->set_pattern(rankLogPattern(rank));
    sinks.push_back(file_sink);
    if (options.to_stderr) {
      auto err_sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
      err_sink->set_level(options.stderr_level);
      err_sink->set_pattern("%H:%M:%S.%e [rank " + std::to_string(rank) + "] [%^%l%$] %v");
      sinks.push_back(err_sink);
    }
    auto logger =
        std::make_shared<spdlog::logger>("rank-" + std::to_string(rank), sinks.begin(), sinks.end());
    logger->set_level(options.to_stderr ? std::min(options.level, options.stderr_level) : options.level);
    logger->flush_on(options.flush_level);
    if (options.make_default) spdlog::set_default_logger(logger);
    return logger;
  } catch (const spdlog::spdlog_ex& e) {
    return Status::ioError("cannot open rank log " + file.string() + ": " + e.what());
  }
}

}  // namespace fs::telemetry
