// RankLogTail: follows every logs/rank-<r>.log of a run directory, line by line.
//
// Each call to poll() lists logs/ (files appear as ranks start), reads what was
// appended to each file since the last call (bounded per call), and returns the
// complete lines with their rank; a partial last line waits for its newline. A file
// that shrank is read again from its start and reported.
//
// Thread-safety: not thread-safe; used by the follower's thread only. Does file I/O.
#pragma once

#include <QList>
#include <QString>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "app/monitor/follow_types.h"

namespace fs::app {

class RankLogTail {
 public:
  // `offsets`: where to continue in each rank's file (from FollowPosition).
  RankLogTail(std::filesystem::path logsDir, std::map<int, std::uint64_t> offsets);

  // Appends new complete lines to *lines and problems to *issues.
  void poll(QList<RankLogLine>* lines, std::vector<FollowIssue>* issues);
  // Offset after the last complete line delivered, per rank.
  std::map<int, std::uint64_t> offsets() const;

  // Bytes read from one file per poll at most, so one huge log cannot stall the rest.
  static constexpr std::size_t kMaxReadPerPoll = 4u << 20;

 private:
  struct File {
    std::uint64_t offset = 0;  // after the last complete line
    std::string partial;       // bytes after `offset` without a newline yet
    bool error_reported = false;
  };
  void readFile(int rank, const std::filesystem::path& path, File& f, QList<RankLogLine>* lines,
                std::vector<FollowIssue>* issues);

  std::filesystem::path dir_;
  std::map<int, File> files_;
};

// The rank of "rank-<r>.log", or -1 for any other name.
int rankOfLogFileName(std::string_view name);

}  // namespace fs::app
