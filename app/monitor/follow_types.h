// The values a RunFollower hands out: where it stands in a run directory, what it
// delivers per poll, and what it reports.
//
// Thread-safety: plain values, copied (or shared read-only) across threads.
#pragma once

#include <QList>
#include <QString>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/monitor/series_batch.h"
#include "backend/protocol/wire/events.h"
#include "backend/protocol/wire/run_manifest.h"

namespace fs::app {

// Where a follower stands: a later follower started here continues exactly where this
// one stopped, with nothing lost and nothing delivered twice.
struct FollowPosition {
  std::uint64_t offset = 0;                  // events.jsonl byte offset just after the last complete line
  std::uint64_t next_line = 1;               // line number of the line starting at `offset`
  std::optional<std::uint64_t> last_seq;     // highest seq delivered; none before the first event
  std::uint64_t inode = 0;                   // events.jsonl's inode when read; 0 when not known yet
  std::string head;                          // its first bytes, where the source knows no inode (remote)
  std::map<int, std::uint64_t> log_offsets;  // logs/rank-<r>.log: offset after its last complete line
  bool operator==(const FollowPosition&) const = default;
};

// Something the user should be told about the event stream. Decoding goes on.
struct FollowIssue {
  enum class Kind {
    kTruncated,    // events.jsonl shrank below the read position; re-read from the start
    kReplaced,     // events.jsonl is another file now (new inode, new first bytes); re-read from the start
    kRemoved,      // events.jsonl disappeared; waiting for it to come back
    kUndecodable,  // a line the decoder rejected; skipped
    kSeqGap,       // seqs missing between two delivered events
    kDuplicate,    // an event whose seq was already delivered; dropped
    kReadError,    // the file could not be read (permissions, I/O)
    kLogIssue,     // a rank log shrank or could not be read
  };
  Kind kind = Kind::kUndecodable;
  QString message;                  // complete sentence naming the file, line / offset and seqs
  std::uint64_t line = 0;           // events.jsonl line, when the issue is about one
  std::uint64_t offset = 0;         // its byte offset
  std::uint64_t first_missing = 0;  // kSeqGap: first missing seq
  std::uint64_t last_missing = 0;   // kSeqGap: last missing seq (inclusive)
};

// What one poll delivered, in file order.
struct FollowBatch {
  SeriesBatch series;                        // points of step, validation and memory events
  std::vector<protocol::Event> events;       // every delivered event except steps, in order
  std::vector<std::uint64_t> seqs;           // seq of every delivered event (steps too), in order
  std::optional<protocol::Event> last_step;  // the last step event delivered, if any
  FollowPosition position;                   // where the follower stands after this batch
  bool at_end = false;                       // events.jsonl was read to its end by this poll
  // run.json's attempts, read when the batch holds a run_started (rank 0 records the attempt
  // before it emits that event); unset otherwise or when run.json could not be read.
  std::optional<std::vector<protocol::RunAttempt>> attempts;
};
using FollowBatchPtr = std::shared_ptr<const FollowBatch>;

// One complete line of logs/rank-<r>.log.
struct RankLogLine {
  int rank = 0;
  QString text;  // without the line break
};

}  // namespace fs::app
