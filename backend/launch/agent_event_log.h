// The writer of <run_dir>/agent-<node>.jsonl (records: backend/protocol/wire/agent_events.h).
//
// Each event is one whole line written by one write() on an O_APPEND descriptor, with
// `seq` gap-free and `t` from the clock. Opening a file that already holds events (an
// agent started again on the same run directory and node) first cuts a partial last
// line, then continues after the highest seq found, so the file stays gap-free.
//
// Thread-safety: not thread-safe; one writer per file. Ownership: owns its descriptor
// (closed on destruction; movable, not copyable).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/agent_events.h"

namespace fs::launch {

class AgentEventLog {
 public:
  using Clock = std::function<std::int64_t()>;  // unix milliseconds

  // Opens (creating it, mode 0644) and prepares the file. REQUIRES: its directory exists.
  static protocol::StatusOr<AgentEventLog> open(const std::filesystem::path& path, Clock clock = {});

  AgentEventLog(AgentEventLog&& other) noexcept;
  AgentEventLog& operator=(AgentEventLog&& other) noexcept;
  AgentEventLog(const AgentEventLog&) = delete;
  AgentEventLog& operator=(const AgentEventLog&) = delete;
  ~AgentEventLog();

  // Stamps `body` with the next seq and the clock's time and appends its line. The seq
  // is used even when the write fails (IOError naming the file), so a reader sees a gap
  // where an event was lost rather than a silent renumbering.
  protocol::Status append(protocol::AgentEventBody body);

  std::uint64_t nextSeq() const { return next_seq_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  AgentEventLog(std::filesystem::path path, int fd, std::uint64_t next_seq, Clock clock);

  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t next_seq_ = 0;
  Clock clock_;
};

}  // namespace fs::launch
