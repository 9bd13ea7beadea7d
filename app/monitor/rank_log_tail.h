// RankLogTail: follows every logs/rank-<r>.log of a run directory, line by line.
//
// Each call to poll() lists logs/ (files appear as ranks start; every `listEvery`-th
// call, and every call while no log is known), reads what was
// appended to each file since the last call (bounded per call), and returns the
// complete lines with their rank; a partial last line waits for its newline, and a
// line longer than kMaxLineBytes comes out cut there and marked, the rest of it dropped
// (NOTE [Bounded lines] in backend/protocol/wire/line_splitter.h). A file
// that shrank, or that another file replaced (where the source tells), is read again
// from its start and reported. The files come from a RunDirSource: local, or on a
// remote::Host (NOTE [Sources and decoders] in byte_source.h).
//
// Thread-safety: not thread-safe; used by the follower's thread only. Does I/O
// through its sources.
#pragma once

#include <QList>
#include <QString>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/monitor/byte_source.h"
#include "app/monitor/follow_types.h"
#include "backend/protocol/wire/line_splitter.h"

namespace fs::app {

class RankLogTail {
 public:
  // `offsets`: where to continue in each rank's file (from FollowPosition).
  // REQUIRES: runDir.
  // `listEvery`: list logs/ at every listEvery-th poll (NOTE [Idle polling] in
  // run_follower.cpp); the polls between read the files already known.
  RankLogTail(std::shared_ptr<RunDirSource> runDir, std::map<int, std::uint64_t> offsets, int listEvery = 1);

  // Appends new complete lines to *lines and problems to *issues.
  void poll(QList<RankLogLine>* lines, std::vector<FollowIssue>* issues);
  // Offset after the last complete line delivered, per rank.
  std::map<int, std::uint64_t> offsets() const;

  // Bytes read from one file per poll at most, so one huge log cannot stall the rest.
  static constexpr std::size_t kMaxReadPerPoll = 4u << 20;
  // The longest log line kept whole: the launcher's limit for a process's output
  // (OutputLines), which shows the same ranks' stdout when they run here.
  static constexpr std::size_t kMaxLineBytes = 64u << 10;
  // Bytes of unfinished lines held for `rank` (at most kMaxLineBytes); for tests.
  std::size_t bufferedBytes(int rank) const;

 private:
  struct File {
    File() : lines(kMaxLineBytes) {}
    protocol::LineSplitter lines;  // lineStart(): after the last complete line; position(): read so far
    bool error_reported = false;
    std::unique_ptr<ByteSource> source;  // while the file is listed
    std::string name;                    // its name in logs/ when last listed
  };
  void readFile(int rank, const std::string& name, File& f, QList<RankLogLine>* lines,
                std::vector<FollowIssue>* issues);
  void reportOnce(File& f, const std::string& message, std::vector<FollowIssue>* issues);

  std::shared_ptr<RunDirSource> dir_;
  std::map<int, File> files_;
  std::string read_buf_;  // one poll's read of one file (kMaxReadPerPoll at most)
  int list_every_ = 1;
  int polls_since_list_ = 0;
};

// The rank of "rank-<r>.log", or -1 for any other name.
int rankOfLogFileName(std::string_view name);

}  // namespace fs::app
