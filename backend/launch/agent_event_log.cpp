#include "backend/launch/agent_event_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "backend/protocol/wire/events.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::launch {

using protocol::Status;
using protocol::StatusOr;

namespace {

std::string errnoText(int err) {
  return std::strerror(err);
}

}  // namespace

StatusOr<AgentEventLog> AgentEventLog::open(const std::filesystem::path& path, Clock clock) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::ioError("cannot open " + path.string() + " for appending: " + errnoText(errno));
  auto fail = [&](const std::string& what) {
    int err = errno;
    ::close(fd);
    return Status::ioError("cannot prepare " + path.string() + ": " + what + ": " + errnoText(err));
  };
  auto text = protocol::readSmallFile(path, 256u << 20);
  if (!text) {
    ::close(fd);
    return text.status();
  }
  std::uint64_t next_seq = 0;
  if (!text->empty()) {
    protocol::AgentEventFile existing = protocol::decodeAgentEvents(text.value(), path.filename().string());
    for (const auto& e : existing.events) next_seq = std::max(next_seq, e.seq + 1);
    if (existing.complete_bytes < text->size() &&
        ::ftruncate(fd, static_cast<off_t>(existing.complete_bytes)) != 0) {
      return fail("cutting its partial last line");
    }
  }
  return AgentEventLog(path, fd, next_seq, clock ? std::move(clock) : Clock(protocol::unixMillisNow));
}

AgentEventLog::AgentEventLog(std::filesystem::path path, int fd, std::uint64_t next_seq, Clock clock)
    : path_(std::move(path)), fd_(fd), next_seq_(next_seq), clock_(std::move(clock)) {}

AgentEventLog::AgentEventLog(AgentEventLog&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      next_seq_(other.next_seq_),
      clock_(std::move(other.clock_)) {}

AgentEventLog& AgentEventLog::operator=(AgentEventLog&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    next_seq_ = other.next_seq_;
    clock_ = std::move(other.clock_);
  }
  return *this;
}

AgentEventLog::~AgentEventLog() {
  if (fd_ >= 0) ::close(fd_);
}

Status AgentEventLog::append(protocol::AgentEventBody body) {
  protocol::AgentEvent event{next_seq_++, clock_(), std::move(body)};
  std::string line = protocol::encodeAgentEvent(event);
  // O_APPEND: one write() puts the whole line at the end; retry only what a signal cut.
  std::string_view rest = line;
  while (!rest.empty()) {
    ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::ioError("cannot append to " + path_.string() + ": " + errnoText(errno));
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::ok();
}

}  // namespace fs::launch
